"""The Housekeep family: one task per published scene and one per split (sampling the split's
scenes), each with a reward-free variant. Listing them reads no data; a task whose files are
missing fails in ``validate_data`` with a clear error.
"""

from __future__ import annotations

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.family import EnvFamily, Network, Normalization
from llmexplore.envs.housekeep.scenes import SCENE_SPLITS, SHORT_NAMES, SPLITS

NAME = "housekeep"
BUDGET = 1_000_000  # this suite's choice (a symbolic task; no published RL budget carries over)


def _variants(name: str, description: str, options: dict) -> tuple[TaskSpec, ...]:
    variants = (("", False, "Housekeep's pick/place reward"), ("-reward-free", True, "no reward"))
    return tuple(
        TaskSpec(name=f"{NAME}:{name}{suffix}", family=NAME, description=f"{description}; {note}",
                 default_budget=BUDGET, reward_free=reward_free, default_ext_coef=0.0 if reward_free else 1.0,
                 options=options)
        for suffix, reward_free, note in variants
    )


def _tasks() -> tuple[TaskSpec, ...]:
    tasks: list[TaskSpec] = []
    for short, scene in SHORT_NAMES.items():
        tasks += _variants(short, f"tidy {scene} ({SCENE_SPLITS[scene]} split), one of its published "
                                  "episodes per reset", {"scenes": (scene,)})
    for split in SPLITS:
        tasks += _variants(split, f"tidy a published episode of a random {split}-split scene (scenes whose "
                                  "episode files are present)", {"split": split})
    return tuple(tasks)


FAMILY = EnvFamily(
    name=NAME,
    title="Housekeep",
    adapter="llmexplore.envs.housekeep.adapter:HousekeepAdapter",
    # Housekeep needs only the core dependencies (and its data), so the probe always imports
    extra="all",
    probe_module="numpy",
    tasks=_tasks(),
    train_defaults=dict(envs_per_worker=16, batch_size=1024, gamma=0.99, reward_scale=1.0),
    networks={"small": Network("housekeep", "llmexplore.envs.housekeep.network:HousekeepEncoder",
                                     "embeddings of the symbolic view (room, receptacle and object ids), sized for a CPU")},
    # the agent's situation: where it is, what lies here and on what, what it carries
    # ("rooms", the house plan, is fixed within an episode and left out)
    novelty_keys=("room", "receptacles", "at", "objects", "object_on", "held"),
    normalization=Normalization("rearrange_success", 0.0, 1.0, "fraction of objects on a correct receptacle"),
    extra_columns=("objects_fixed", "objects_displaced", "misplaced_end"),
    metric_ranges={"rearrange_success": (0.0, 1.0)},
    reference_steps_per_second=1_000,  # symbolic
    data_sources=("housekeep",),
    oracle_answers={"housekeep_placement": "llmexplore.envs.housekeep.oracle:placement_answer"},
)
