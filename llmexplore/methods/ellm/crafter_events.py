"""What the agent did in a Crafter step, in ELLM's verb-object words, when it succeeded.

ELLM rewards the caption of the action that succeeded ("chop tree"). Its Crafter fork
returns an action-success flag; stock Crafter 1.8.3 has none, so we infer success from
what the step changed: each achievement counter in ``info["achievements"]`` that went up
names the action that made it go up (``collect_wood`` -> "chop tree"), and falling asleep,
which no counter records, is inferred from the inventory: the agent chose ``sleep`` while
its energy was below the maximum, Crafter's own condition for starting to sleep.

This is stricter than the fork in three places, which count an attempt as a success:
hitting a zombie, skeleton or cow counts only when it dies (``defeat_*``, ``eat_cow``),
and doing on grass counts only when a sapling drops (``collect_sapling``, 10% per try).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from llmexplore.envs.crafter.text import INVENTORY

#: achievement counter -> the caption of the action that raises it (wake_up is no action)
ACHIEVEMENT_CAPTIONS: dict[str, str] = {
    "collect_coal": "mine coal",
    "collect_diamond": "mine diamond",
    "collect_drink": "drink water",
    "collect_iron": "mine iron",
    "collect_sapling": "chop grass",
    "collect_stone": "mine stone",
    "collect_wood": "chop tree",
    "defeat_skeleton": "attack skeleton",
    "defeat_zombie": "attack zombie",
    "eat_cow": "eat cow",
    "eat_plant": "eat plant",
    "make_iron_pickaxe": "make iron pickaxe",
    "make_iron_sword": "make iron sword",
    "make_stone_pickaxe": "make stone pickaxe",
    "make_stone_sword": "make stone sword",
    "make_wood_pickaxe": "make wood pickaxe",
    "make_wood_sword": "make wood sword",
    "place_furnace": "place furnace",
    "place_plant": "place plant",
    "place_stone": "place stone",
    "place_table": "place crafting table",
}
NOT_ACTIONS = ("wake_up",)
SLEEP = "sleep"
MAX_ENERGY = 9
_ENERGY = INVENTORY.index("energy")

#: goals ELLM treats as one: achieving either removes both from later suggestions
EQUIVALENT_GOALS: dict[str, tuple[str, ...]] = {
    "eat cow": ("attack cow",),
    "attack cow": ("eat cow",),
    "place crafting table": ("make crafting table",),
    "make crafting table": ("place crafting table",),
}


def successful_actions(action_name: str, inventory_before: np.ndarray, achievements_before: Mapping[str, int],
                       achievements_after: Mapping[str, int]) -> list[str]:
    """Captions of the actions that succeeded in this step (usually none, at most one in practice)."""
    done = [caption for name, caption in ACHIEVEMENT_CAPTIONS.items()
            if achievements_after.get(name, 0) > achievements_before.get(name, 0)]
    if action_name == SLEEP and float(np.asarray(inventory_before).reshape(-1)[_ENERGY]) < MAX_ENERGY:
        done.append(SLEEP)
    return done


def with_equivalents(goals: set[str]) -> set[str]:
    """A new set: the goals plus those ELLM treats as the same (eat/attack cow, place/make crafting table)."""
    out = set(goals)
    for goal in goals:
        out.update(EQUIVALENT_GOALS.get(goal, ()))
    return out
