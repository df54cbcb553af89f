"""The embedded oracle's Crafter knowledge: which verb-object goals a player can pursue now.

The family declares the question kind it answers (``EnvFamily.oracle_answers``): ELLM's
``ellm_goals`` (``ellm_goals_answer``).

A goal is suggested when its prerequisites are met by what the caption shows: the
objects in view and the inventory. Costs follow Crafter 1.8.3's rules (``data.yaml``);
a unit test checks this table against the installed package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.lm.oracle import OracleQuery

#: (goal, objects that must be in view, inventory needed {item: count}, status word needed)
RULES: tuple[tuple[str, tuple[str, ...], dict[str, int], str | None], ...] = (
    ("chop tree", ("tree",), {}, None),
    ("chop grass", ("grass",), {}, None),
    ("drink water", ("water",), {}, None),
    ("mine stone", ("stone",), {"wood_pickaxe": 1}, None),
    ("mine coal", ("coal",), {"wood_pickaxe": 1}, None),
    ("mine iron", ("iron",), {"stone_pickaxe": 1}, None),
    ("mine diamond", ("diamond",), {"iron_pickaxe": 1}, None),
    ("eat cow", ("cow",), {}, None),
    ("eat plant", ("plant",), {}, None),
    ("attack zombie", ("zombie",), {}, None),
    ("attack skeleton", ("skeleton",), {}, None),
    ("attack cow", ("cow",), {}, None),
    ("place stone", (), {"stone": 1}, None),
    ("place crafting table", (), {"wood": 2}, None),
    ("place furnace", ("crafting table",), {"stone": 4}, None),
    ("place plant", ("grass",), {"sapling": 1}, None),
    ("make wood pickaxe", ("crafting table",), {"wood": 1}, None),
    ("make stone pickaxe", ("crafting table",), {"wood": 1, "stone": 1}, None),
    ("make iron pickaxe", ("crafting table", "furnace"), {"wood": 1, "coal": 1, "iron": 1}, None),
    ("make wood sword", ("crafting table",), {"wood": 1}, None),
    ("make stone sword", ("crafting table",), {"wood": 1, "stone": 1}, None),
    ("make iron sword", ("crafting table", "furnace"), {"wood": 1, "coal": 1, "iron": 1}, None),
    ("sleep", (), {}, "sleepy"),
)


@dataclass
class CrafterView:
    visible: set[str] = field(default_factory=set)
    facing: str | None = None
    inventory: dict[str, int] = field(default_factory=dict)
    status: set[str] = field(default_factory=set)


_ITEM = re.compile(r"([a-z][a-z ]*?) \((\d+)\)")


def parse_caption(caption: str) -> CrafterView:
    """Read a caption written by ``llmexplore.envs.crafter.text.caption`` back into its parts."""
    view = CrafterView()
    for sentence in caption.split(". "):
        sentence = sentence.strip().rstrip(".")
        if sentence.startswith("You see "):
            view.visible = {s.strip() for s in sentence[len("You see "):].split(",") if s.strip()}
        elif sentence.startswith("You face "):
            view.facing = sentence[len("You face "):].strip()
        elif sentence.startswith("You have "):
            items = _ITEM.findall(sentence[len("You have "):])
            view.inventory = {name.strip().replace(" ", "_"): int(n) for name, n in items}
        elif sentence.startswith("You feel "):
            view.status = {s.strip() for s in sentence[len("You feel "):].split(",") if s.strip()}
    if view.facing:
        view.visible.add(view.facing)
    return view


def suggest_goals(view: CrafterView) -> list[str]:
    """Goals of ``RULES`` whose objects are in view, costs held and status word felt, in ``RULES`` order."""
    out = []
    for goal, objects, costs, status in RULES:
        if not all(o in view.visible for o in objects):
            continue
        if not all(view.inventory.get(item, 0) >= n for item, n in costs.items()):
            continue
        if status is not None and status not in view.status:
            continue
        out.append(goal)
    return out


def goals_answer(caption: str) -> str:
    """The oracle's ELLM reply: one sentence on what is seen and held, then a
    ``- goal`` line per goal whose requirements are met (``- none`` when none is)."""
    view = parse_caption(caption)
    goals = suggest_goals(view)
    seen = ", ".join(sorted(view.visible)) or "nothing of note"
    held = ", ".join(f"{k.replace('_', ' ')} ({v})" for k, v in sorted(view.inventory.items())) or "nothing"
    intro = f"The player can see {seen} and holds {held}."
    if not goals:
        return f"{intro} None of the goals has its requirements met yet.\n- none"
    return f"{intro} These goals have their requirements met:\n" + "\n".join(f"- {g}" for g in goals)


def ellm_goals_answer(query: "OracleQuery") -> str:
    """The ``ellm_goals`` kind: the goals the caption's view and inventory allow."""
    return goals_answer(query.fields["caption"])
