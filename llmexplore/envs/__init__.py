"""Environment families, their tasks and adapters.

Task names are ``family:task``. Each family describes itself in one ``EnvFamily``
(``envs/family.py``) in its own folder — ``nethack/family.py`` (the Motif, ONI and
MaestroMotif tasks), ``crafter/family.py`` (the reward and reward-free task of its
benchmark), ``housekeep/family.py`` (one task per published scene and per split) — and is
registered below with one line. Listing tasks reads no data and imports no simulator; a task
whose files are missing fails in ``validate_data`` with a clear error.
"""

from __future__ import annotations

from llmexplore.envs.base import EPISODE_STATS_KEY, EnvAdapter, TaskSpec
from llmexplore.envs.family import EnvFamily, Network, Normalization, ScreenFactory, StatsFile, import_path
from llmexplore.envs.registry import (
    GYM_IDS,
    adapter_class,
    families,
    find_family,
    get_family,
    get_task,
    gym_id,
    list_tasks,
    make_adapter,
    register_family,
    register_plugin_families,
    register_task,
    task_names,
    unregister_family,
)

__all__ = [
    "EPISODE_STATS_KEY",
    "GYM_IDS",
    "EnvAdapter",
    "EnvFamily",
    "Network",
    "Normalization",
    "ScreenFactory",
    "StatsFile",
    "TaskSpec",
    "adapter_class",
    "families",
    "find_family",
    "get_family",
    "get_task",
    "gym_id",
    "list_tasks",
    "make_adapter",
    "register_family",
    "register_task",
    "task_names",
    "unregister_family",
]

# one line per family (the order is that of the leaderboard's normalisation notes)
register_family(import_path("llmexplore.envs.crafter.family:FAMILY"))
register_family(import_path("llmexplore.envs.nethack.family:FAMILY"))
register_family(import_path("llmexplore.envs.housekeep.family:FAMILY"))
register_family(import_path("llmexplore.envs.minihack.family:FAMILY"))
register_plugin_families()  # LLMEXPLORE_FAMILIES and the entry-point group llmexplore.envs
