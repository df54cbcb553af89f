"""Environment adapters and the task registry.

Task names are ``family:task``. NetHack tasks follow the Motif and ONI papers (the
``-extended`` variants use ONI's 28-action set) and MaestroMotif's zero-shot evaluation
(``nethack/zero_shot.py``; 29 actions by default: ONI's 28 plus drop, which selling and
altar identification need) with the tasks its skills train on (``maestro-score``, and
``maestro-practice``, which starts each episode beside a shopkeeper or an altar, set up in
wizard mode: ``nethack/practice.py``); Crafter has the reward and the reward-free task of its
benchmark; Housekeep has one task per published scene and one per
split (sampling the split's scenes), each with a reward-free variant. Listing tasks reads
no data; a task whose files are missing fails in ``validate_data`` with a clear error.
"""

from __future__ import annotations

from llmexplore.envs.base import EPISODE_STATS_KEY, EnvAdapter, TaskSpec
from llmexplore.envs.housekeep import scenes as _housekeep_scenes
from llmexplore.envs.registry import (
    adapter_class,
    get_task,
    list_tasks,
    make_adapter,
    register_family,
    register_task,
    task_names,
)

__all__ = [
    "EPISODE_STATS_KEY",
    "GYM_IDS",
    "EnvAdapter",
    "TaskSpec",
    "adapter_class",
    "get_task",
    "gym_id",
    "list_tasks",
    "make_adapter",
    "register_family",
    "register_task",
    "task_names",
]

NETHACK_BUDGET = 2_000_000_000  # Motif's published training budget
CRAFTER_BUDGET = 1_000_000  # Crafter's benchmark protocol
HOUSEKEEP_BUDGET = 1_000_000  # this suite's choice (a symbolic task; no published RL budget carries over)

_NETHACK_TASKS = {
    "score": ("NetHack Score: score delta, -0.01 when game time stands still", 0.1),
    "staircase": ("descend to dungeon level 2 (+50, ends)", 10.0),
    "staircase-lvl3": ("descend to dungeon level 3 (+50, ends)", 10.0),
    "staircase-lvl4": ("descend to dungeon level 4 (+50, ends)", 10.0),
    "staircase-lvl3-continual": ("reach level 3 (+50 once); ends only on death", 10.0),
    "staircase-lvl4-continual": ("reach level 4 (+50 once); ends only on death", 10.0),
    "oracle": ("stand next to the Oracle (+50, ends)", 10.0),
    "oracle-sober": ("stand next to the Oracle while not hallucinating (+50, ends)", 10.0),
}

#: MaestroMotif's zero-shot tasks (llmexplore.envs.nethack.zero_shot.ZERO_SHOT_TASKS has their prompts)
_ZERO_SHOT_TASKS = {
    "gnomish-mines": "enter the Gnomish Mines (+50, ends)",
    "delphi": "reach the Oracle's level, Delphi (+50, ends)",
    "minetown": "reach Minetown in the Gnomish Mines (+50, ends)",
    "transaction": "buy or sell an item in a shop (+50, ends)",
    "price-id": "get a shopkeeper's price for an item (+50, ends)",
    "buc-id": "learn an item's blessed/uncursed/cursed status at an altar (+50, ends)",
    "golden-exit": "25 kills, 20 gold and level 3, then leave by level 1's up stairs (+50, ends)",
    "level-up-and-sell": "XP level 4 on level 1, then sell an item and survive 300 steps (+50, ends)",
    "discovery-hunger": "get hungry and eat in the Gnomish Mines, then reach Delphi (+50, ends)",
}

register_family("nethack", "llmexplore.envs.nethack.adapter:NetHackAdapter", "nethack", "nle")
register_family("crafter", "llmexplore.envs.crafter.adapter:CrafterAdapter", "crafter", "crafter")
# Housekeep needs only the core dependencies (and its data), so the probe always imports
register_family("housekeep", "llmexplore.envs.housekeep.adapter:HousekeepAdapter", "all", "numpy")

_TASK_ACTIONS = (("task", "", ""), ("extended", "-extended", " [28 actions]"))
_ZERO_SHOT_ACTIONS = (("maestro", "", " [29 actions]"), ("extended", "-extended", " [28 actions: no drop]"))
_NETHACK_ALL = {t: (d, c, _TASK_ACTIONS) for t, (d, c) in _NETHACK_TASKS.items()}
_NETHACK_ALL.update({t: (d, 10.0, _ZERO_SHOT_ACTIONS) for t, d in _ZERO_SHOT_TASKS.items()})
# MaestroMotif's skills train with the zero-shot tasks' actions and questions, on Score's reward
_NETHACK_ALL["maestro-score"] = ("NetHack Score with the zero-shot tasks' drop/shop questions left to the agent",
                                 0.1, (("maestro", "", " [29 actions]"),))
# ... and practise their rare skills from scenes set in wizard mode at reset (nethack/practice.py)
_NETHACK_ALL["maestro-practice"] = ("maestro-score starting each episode inside a Minetown shop or beside an "
                                    "altar at depth 5-8 (wizard mode at reset only)",
                                    0.1, (("maestro", "", " [29 actions]"),))

for _task, (_desc, _c_ext, _variants) in _NETHACK_ALL.items():
    for _actions, _suffix, _note in _variants:
        register_task(
            TaskSpec(
                name=f"nethack:{_task}{_suffix}",
                family="nethack",
                description=_desc + _note,
                default_budget=NETHACK_BUDGET,
                default_ext_coef=_c_ext,
                options={"task": _task, "actions": _actions},
            )
        )

register_task(
    TaskSpec(
        name="crafter:reward",
        family="crafter",
        description="Crafter with its reward (+1 per new achievement, health changes)",
        default_budget=CRAFTER_BUDGET,
        default_ext_coef=1.0,
    )
)
register_task(
    TaskSpec(
        name="crafter:reward-free",
        family="crafter",
        description="Crafter without reward (exploration/pretraining protocol)",
        default_budget=CRAFTER_BUDGET,
        reward_free=True,
        default_ext_coef=0.0,
    )
)


def _register_housekeep(name: str, description: str, options: dict) -> None:
    variants = (("", False, "Housekeep's pick/place reward"), ("-reward-free", True, "no reward"))
    for suffix, reward_free, note in variants:
        register_task(
            TaskSpec(
                name=f"housekeep:{name}{suffix}",
                family="housekeep",
                description=f"{description}; {note}",
                default_budget=HOUSEKEEP_BUDGET,
                reward_free=reward_free,
                default_ext_coef=0.0 if reward_free else 1.0,
                options=options,
            )
        )


for _short, _scene in _housekeep_scenes.SHORT_NAMES.items():
    _register_housekeep(_short, f"tidy {_scene} ({_housekeep_scenes.SCENE_SPLITS[_scene]} split), one of its "
                                "published episodes per reset", {"scenes": (_scene,)})
for _split in _housekeep_scenes.SPLITS:
    _register_housekeep(_split, f"tidy a published episode of a random {_split}-split scene (scenes whose episode "
                                "files are present)", {"split": _split})

from llmexplore.envs.gym_ids import gym_id, register_gym_ids  # noqa: E402

#: task name -> gymnasium id (``gymnasium.make(GYM_IDS["nethack:score"])``)
GYM_IDS = register_gym_ids(task_names())
