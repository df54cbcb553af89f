"""The MiniHack family: the exploration tasks of the E3B and NovelD papers, in NetHack's language.

Each task is one registered MiniHack env (its gymnasium id upstream, its own episode length,
written out here and checked against minihack's default by the family test). The published
runs (E3B's released code, ``e3b_minihack/src/env_utils.py``) fed the agent ``glyphs``,
``blstats`` and ``message``; we train on ``message``, ``blstats`` and the 9x9 character
``crop`` that the NetHack family's small network reads, and offer ``glyphs`` as an extra key.
The metric is the share of episodes that reach the goal (MiniHack's ``TASK_SUCCESSFUL``), the
papers' success rate; normalised with each task's uniformly random policy at 0 and always
succeeding at 1 (``RANDOM_SUCCESS``, measured by ``tests/perf/bench_minihack.py --random``).
"""

from __future__ import annotations

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.family import EnvFamily, Network, Normalization, ScreenFactory
from llmexplore.envs.nethack.family import MESSAGE_TEXT

NAME = "minihack"
#: E3B's MiniHack runs: torchbeast's ``total_frames`` default, 5e7, which its sweep script keeps
BUDGET = 50_000_000
#: the observation keys of E3B's (and its NovelD re-runs') MiniHack agent
PUBLISHED_KEYS = ("glyphs", "blstats", "message")

#: task -> (MiniHack gymnasium id, episode length, needs minigrid, description)
TASKS: dict[str, tuple[str, int, bool, str]] = {
    "keyroom-s5": ("MiniHack-KeyRoom-S5-v0", 200, False,
                   "pick up a key, unlock the door of a small room inside a 5x5 room, reach the stairs (+1, ends)"),
    "keyroom-s15": ("MiniHack-KeyRoom-S15-v0", 400, False, "KeyRoom inside a 15x15 room (+1, ends)"),
    "multiroom-n2": ("MiniHack-MultiRoom-N2-v0", 40, True,
                     "walk through 2 rooms joined by closed doors to the stairs (+1, ends)"),
    "multiroom-n4": ("MiniHack-MultiRoom-N4-v0", 120, True, "MultiRoom with 4 rooms (+1, ends)"),
    "multiroom-n6": ("MiniHack-MultiRoom-N6-v0", 240, True, "MultiRoom with 6 rooms (+1, ends)"),
    "river": ("MiniHack-River-v0", 350, False,
              "push boulders into a river to cross it and reach the stairs (+1, ends)"),
    "corridor-battle": ("MiniHack-CorridorBattle-v0", 350, False,
                        "fight a horde of rats, best one at a time in the corridor, reach the stairs (+1, ends)"),
    "lavacross-potion": ("MiniHack-LavaCross-Levitate-Potion-Pickup-Restricted-v0", 400, False,
                         "pick up and quaff a potion of levitation to float over lava to the stairs (+1, ends)"),
    "freeze-horn": ("MiniHack-Freeze-Horn-Restricted-v0", 250, False,
                    "pick up and play a frost horn to freeze the lava and cross to the stairs (+1, ends)"),
    "mazewalk-9x9": ("MiniHack-MazeWalk-9x9-v0", 200, False,
                     "find the stairs in a random 9x9 maze (+1, ends)"),
    "mazewalk-15x15": ("MiniHack-MazeWalk-15x15-v0", 1000, False, "a random 15x15 maze (+1, ends)"),
}

#: success rate of a uniformly random policy per task (the normalisation's 0), over 200 seeded episodes
#: each (standard errors 0.01-0.035): ``python tests/perf/bench_minihack.py --random 200``
RANDOM_SUCCESS: dict[str, float] = {f"{NAME}:{task}": rate for task, rate in {
    "keyroom-s5": 0.105, "keyroom-s15": 0.0, "multiroom-n2": 0.155, "multiroom-n4": 0.0, "multiroom-n6": 0.0,
    "river": 0.05, "corridor-battle": 0.0, "lavacross-potion": 0.02, "freeze-horn": 0.085,
    "mazewalk-9x9": 0.435, "mazewalk-15x15": 0.355,
}.items()}


def _tasks() -> tuple[TaskSpec, ...]:
    return tuple(
        TaskSpec(name=f"{NAME}:{task}", family=NAME, description=description + (" [minigrid]" if minigrid else ""),
                 default_budget=BUDGET, default_ext_coef=1.0,
                 options={"env_id": env_id, "max_episode_steps": steps, "minigrid": minigrid,
                          "published_keys": PUBLISHED_KEYS})
        for task, (env_id, steps, minigrid, description) in TASKS.items()
    )


FAMILY = EnvFamily(
    name=NAME,
    title="MiniHack",
    adapter="llmexplore.envs.minihack.adapter:MiniHackAdapter",
    extra="minihack",
    # importing it imports minihack, with pkg_resources provided where setuptools lacks it
    probe_module="llmexplore.envs.minihack.compat",
    tasks=_tasks(),
    # rewards are +1 at the goal: no scaling; episodes are short, so a shorter horizon than NetHack's
    # batched sampling (agents/vector_env.py): `none`, 2 workers, 2 loaded cores, 1.16x the per-env path's
    # steps/s and 647 against 708 CPU microseconds per step; resets are 89% of the adapter's time on
    # multiroom-n2 and cost the same on both paths (tests/perf/bench_sampling.py, docs/GPU.md)
    train_defaults=dict(envs_per_worker=32, batch_size=2048, gamma=0.99, reward_scale=1.0, sampling="batched"),
    # the NetHack family's small network (message trigrams, 9x9 crop, bottom-line stats) under its own name
    networks={"small": Network("minihack", "llmexplore.envs.nethack.network:NetHackEncoder",
                                     "NetHack's small encoder (message, bottom-line stats, 9x9 crop), sized for a CPU")},
    novelty_keys=("crop", "blstats"),
    normalization=Normalization(
        "success", 0.0, 1.0,
        "success rate: each task's uniformly random policy -> 0, every episode reaching the goal -> 1",
        task_low=RANDOM_SUCCESS),
    extra_columns=("return", "length", "died"),
    # 0.65 x NetHack Score's 1,300: `none` trained KeyRoom-S15 at 273 env steps/s beside NetHack Score's 421 on the
    # loaded 2-core machine (tests/perf/bench_minihack.py)
    reference_steps_per_second=850,
    game_version_keys=("nle", "minihack"),
    # records name both from 04275e1 on; every commit before it required nle==1.0.0 and minihack==1.0.2
    game_versions_unrecorded={"nle": "1.0.0", "minihack": "1.0.2"},
    screen=ScreenFactory("llmexplore.envs.nethack.screen:TerminalScreen"),
    # MiniHack's own goal of NetHack's two message questions (its sentence in each kind's goals.yaml); every
    # other goal is answered by NetHack's rules
    oracle_answers={"motif_preference@minihack": "llmexplore.envs.minihack.oracle:motif_answer",
                    "oni_classification@minihack": "llmexplore.envs.minihack.oracle:oni_answer"},
    message_text=MESSAGE_TEXT,  # NetHack's messages
)
