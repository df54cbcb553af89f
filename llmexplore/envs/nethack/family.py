"""The NetHack family (NLE 1.0.0): its tasks and what the generic layers need to know about it.

Tasks follow the Motif and ONI papers (the ``-extended`` variants use ONI's 28-action set) and
MaestroMotif's zero-shot evaluation (``zero_shot.py``; 29 actions by default: ONI's 28 plus
drop, which selling and altar identification need) with the tasks its skills train on
(``maestro-score``, and ``maestro-practice``, which starts each episode beside a shopkeeper or
an altar, set up in wizard mode: ``practice.py``).
"""

from __future__ import annotations

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.family import EnvFamily, MessageText, Network, Normalization, ScreenFactory

NAME = "nethack"
BUDGET = 2_000_000_000  # Motif's published training budget

_TASKS = {
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

_TASK_ACTIONS = (("task", "", ""), ("extended", "-extended", " [28 actions]"))
_ZERO_SHOT_ACTIONS = (("maestro", "", " [29 actions]"), ("extended", "-extended", " [28 actions: no drop]"))


def _tasks() -> tuple[TaskSpec, ...]:
    every = {t: (d, c, _TASK_ACTIONS) for t, (d, c) in _TASKS.items()}
    every.update({t: (d, 10.0, _ZERO_SHOT_ACTIONS) for t, d in _ZERO_SHOT_TASKS.items()})
    # MaestroMotif's skills train with the zero-shot tasks' actions and questions, on Score's reward
    every["maestro-score"] = ("NetHack Score with the zero-shot tasks' drop/shop questions left to the agent",
                              0.1, (("maestro", "", " [29 actions]"),))
    # ... and practise their rare skills from scenes set in wizard mode at reset (practice.py)
    every["maestro-practice"] = ("maestro-score starting each episode inside a Minetown shop or beside an "
                                 "altar at depth 5-8 (wizard mode at reset only)",
                                 0.1, (("maestro", "", " [29 actions]"),))
    return tuple(
        TaskSpec(name=f"{NAME}:{task}{suffix}", family=NAME, description=description + note,
                 default_budget=BUDGET, default_ext_coef=c_ext, options={"task": task, "actions": actions})
        for task, (description, c_ext, variants) in every.items()
        for actions, suffix, note in variants
    )


#: Motif and ONI judge the message the game printed (MiniHack's family declares the same)
MESSAGE_TEXT = MessageText("llmexplore.envs.nethack.messages:SOURCE")

FAMILY = EnvFamily(
    name=NAME,
    title="NetHack",
    adapter="llmexplore.envs.nethack.adapter:NetHackAdapter",
    extra="nethack",
    probe_module="nle",
    tasks=_tasks(),
    # Motif scales NetHack rewards by 0.1 (and clips at 10); sized for the 2-core reference machine
    # batched sampling (agents/vector_env.py): `none`, 2 workers, 2 loaded cores, 1.24x the per-env path's
    # steps/s and 373 against 454 CPU microseconds per step (tests/perf/bench_sampling.py, docs/GPU.md)
    train_defaults=dict(envs_per_worker=32, batch_size=2048, gamma=0.999, reward_scale=0.1, sampling="batched"),
    networks={
        "small": Network("nethack", "llmexplore.envs.nethack.network:NetHackEncoder",
                         "message, bottom-line stats and a 9x9 crop around the hero, sized for a CPU"),
        "light": Network("nethack-light", "llmexplore.envs.nethack.network:NetHackLightEncoder",
                         "the small network's inputs through one 64-unit layer: about a tenth of its arithmetic, "
                         "a smaller policy for long CPU runs (docs/GPU.md); with the light preset, a 64-unit core"),
        # the NLE baseline network Motif's and ONI's code define (envs/nethack/nle_baseline.py)
        "published": Network("nethack-published", "llmexplore.envs.nethack.nle_baseline:NLEBaselineEncoder",
                             "the NLE baseline network Motif's and ONI's code define (glyphs, crop, stats, message)"),
    },
    # the APPO setup of Motif's and ONI's NetHack runs (24 workers x 20 envs, batch 4,096, reward
    # scale 0.1, sample-factory's 512-unit recurrent core) with the NLE baseline network, on a GPU
    presets={
        "published": dict(network="published", num_workers=24, envs_per_worker=20, batch_size=4096,
                          reward_scale=0.1, rnn_size=512, device="gpu"),
        "light": dict(network="light", rnn_size=64),
    },
    preset_notes={"published": "the APPO setup of Motif's and ONI's NetHack runs (24 workers x 20 envs, batch "
                               "4,096, reward scale 0.1, a 512-unit recurrent core) with the published network, "
                               "on a GPU",
                  "light": "ours, not published: the light network and a 64-unit recurrent core, about a tenth of "
                           "the small network's arithmetic per step, for long runs on a CPU (docs/GPU.md)"},
    novelty_keys=("crop", "blstats"),
    normalization=Normalization("progression", 0.0, 100.0, "BALROG progression in percent: 100 = ascension"),
    extra_columns=("score", "depth", "experience_level", "gold", "kills"),
    metric_ranges={"progression": (0.0, 100.0)},
    reference_steps_per_second=1_300,  # NetHack Score (README)
    # `none` on NetHack Score, one H200 with 16 CPU cores, -t preset=published -t num_workers=16 (docs/GPU.md)
    gpu_machine_steps_per_second={"published": 15_565, "small": 31_949},
    screen=ScreenFactory("llmexplore.envs.nethack.screen:TerminalScreen"),
    data_sources=("balrog",),
    game_version_keys=("nle",),
    # records name NLE's version from 04275e1 on; every commit before it required nle==1.0.0
    game_versions_unrecorded={"nle": "1.0.0"},
    oracle_answers={"motif_preference": "llmexplore.envs.nethack.oracle:motif_answer",
                    "oni_classification": "llmexplore.envs.nethack.oracle:oni_answer",
                    # MaestroMotif's skill code: reference functions kept beside the method
                    "maestro_code": "llmexplore.methods.maestro.oracle_answer:answer"},
    message_text=MESSAGE_TEXT,
)
