"""The embedded oracle's Crafter judgements for Motif and ONI: how far along Crafter's tech tree a caption is.

The family declares the question kinds it answers (``EnvFamily.oracle_answers``): ``crafter_preference``
(Motif, ONI-Ranking: ``preference_answer``) and ``crafter_helpfulness`` (ONI-Retrieval and -Classification:
``helpfulness_answer``).

Why a tree: Crafter's 22 achievements are published with their prerequisites (Hafner, 2021; the rules are
Crafter 1.8.3's ``data.yaml``: a tool needs its materials and a table or furnace nearby, a material needs
its pickaxe). An achievement deeper in that tree is harder to reach, so a caption evidencing a deeper one
shows more progress. A caption evidences an achievement by what it holds (wood: collect wood; a stone
pickaxe: make stone pickaxe) and by what only the player can have put in view (a crafting table, a
furnace, a plant). Its value is, in this order of weight, the depth of its deepest evidenced achievement,
how many it evidences, and how few low vitals it reports (hurt, hungry, thirsty, sleepy: eating,
drinking and sleeping are achievements too, and a low vital is the sign of neglecting them).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from llmexplore.envs.crafter.oracle import parse_caption

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.lm.oracle import OracleQuery

#: achievement -> the achievements it needs first (Crafter 1.8.3's data.yaml): a root needs nothing
PREREQUISITES: dict[str, tuple[str, ...]] = {
    "collect_wood": (), "collect_sapling": (), "collect_drink": (), "eat_cow": (), "defeat_zombie": (),
    "defeat_skeleton": (), "wake_up": (),
    "place_plant": ("collect_sapling",), "eat_plant": ("place_plant",),
    "place_table": ("collect_wood",),
    "make_wood_pickaxe": ("place_table",), "make_wood_sword": ("place_table",),
    "collect_stone": ("make_wood_pickaxe",), "collect_coal": ("make_wood_pickaxe",),
    "place_stone": ("collect_stone",), "place_furnace": ("collect_stone",),
    "make_stone_pickaxe": ("collect_stone",), "make_stone_sword": ("collect_stone",),
    "collect_iron": ("make_stone_pickaxe",),
    "make_iron_pickaxe": ("collect_iron", "collect_coal", "place_furnace"),
    "make_iron_sword": ("collect_iron", "collect_coal", "place_furnace"),
    "collect_diamond": ("make_iron_pickaxe",),
}
#: inventory item (as the caption parses it) -> the achievement holding it proves
HELD: dict[str, str] = {
    "sapling": "collect_sapling", "wood": "collect_wood", "stone": "collect_stone", "coal": "collect_coal",
    "iron": "collect_iron", "diamond": "collect_diamond", "wood_pickaxe": "make_wood_pickaxe",
    "stone_pickaxe": "make_stone_pickaxe", "iron_pickaxe": "make_iron_pickaxe", "wood_sword": "make_wood_sword",
    "stone_sword": "make_stone_sword", "iron_sword": "make_iron_sword",
}
#: what only the player puts into the world (world generation places none of them) -> the achievement
PLACED: dict[str, str] = {"crafting table": "place_table", "furnace": "place_furnace", "plant": "place_plant"}
#: the value's weights: one level deeper outweighs any breadth (at most 15 achievements evidenced) and vitals (4)
DEPTH_WEIGHT = 20
#: ONI labels helpful only captions past the first gatherings: a placed table or plant, or anything made or mined
HELPFUL_DEPTH = 2
GOAL_SUMMARY = "progress means unlocking achievements deeper in the tech tree, from wood to diamonds"


@lru_cache(maxsize=None)
def depth(achievement: str) -> int:
    """1 for a root of the tree, else one more than its deepest prerequisite (collect diamond: 8)."""
    return 1 + max((depth(p) for p in PREREQUISITES[achievement]), default=0)


def evidenced(caption: str) -> list[str]:
    """The achievements a caption proves unlocked, deepest first (ties by name)."""
    view = parse_caption(caption)
    found = {HELD[item] for item, count in view.inventory.items() if count > 0 and item in HELD}
    found |= {achievement for name, achievement in PLACED.items() if name in view.visible}
    return sorted(found, key=lambda a: (-depth(a), a))


@lru_cache(maxsize=200_000)
def caption_value(caption: str) -> float:
    """DEPTH_WEIGHT x the deepest evidenced achievement's depth, + how many are evidenced, - low vitals."""
    shown = evidenced(caption)
    deepest = depth(shown[0]) if shown else 0
    return float(DEPTH_WEIGHT * deepest + len(shown) - len(parse_caption(caption).status))


def describe(caption: str) -> str:
    """What the caption shows of the tree, worded to follow "Description 1"."""
    shown = evidenced(caption)
    low = sorted(parse_caption(caption).status)
    if not shown:
        text = "shows no achievement unlocked yet"
    else:
        names = ", ".join(a.replace("_", " ") for a in shown)
        text = f"shows {names} (deepest at step {depth(shown[0])} of the tree)"
    return text + (f", and the player feels {' and '.join(low)}" if low else "")


def preference_answer(first: str, second: str) -> str:
    """A short comparison, then the declared choice, as an LM would write it."""
    v1, v2 = caption_value(first), caption_value(second)
    if v1 == v2:
        verdict, why = "none", "Neither description shows more progress than the other."
    elif v1 > v2:
        verdict, why = "1", "Description 1 shows more progress."
    else:
        verdict, why = "2", "Description 2 shows more progress."
    return (f"In Crafter {GOAL_SUMMARY}. Description 1 {describe(first)}. Description 2 {describe(second)}. "
            f"{why}\nPreferred: {verdict}")


def is_helpful(caption: str) -> bool:
    """Whether the caption evidences an achievement at least ``HELPFUL_DEPTH`` deep."""
    shown = evidenced(caption)
    return bool(shown) and depth(shown[0]) >= HELPFUL_DEPTH


def helpfulness_answer(caption: str) -> str:
    """ONI's label as the oracle writes it: a reason, then ``Verdict: helpful`` or ``Verdict: unhelpful``."""
    helpful = is_helpful(caption)
    strength = "extremely helpful" if helpful else "not extremely helpful"
    return (f"In Crafter {GOAL_SUMMARY}. The description {describe(caption)}, so it is {strength} for the goal."
            f"\nVerdict: {'helpful' if helpful else 'unhelpful'}")


def crafter_preference_answer(query: "OracleQuery") -> str:
    """The ``crafter_preference`` kind: which of two captions is further along the tree (every goal alike)."""
    return preference_answer(query.fields["first"], query.fields["second"])


def crafter_helpfulness_answer(query: "OracleQuery") -> str:
    """The ``crafter_helpfulness`` kind: whether one caption is extremely far along the tree."""
    return helpfulness_answer(query.fields["message"])
