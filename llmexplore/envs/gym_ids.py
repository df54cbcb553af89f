"""gymnasium ids for every task: ``gymnasium.make("llmexplore/NetHackScore-v0")``.

gymnasium reads a colon in an id as ``module:name``, so the task names (``nethack:score``)
cannot serve as ids; each id is the task name in CamelCase under the ``llmexplore``
namespace, version 0. Importing ``llmexplore.envs`` registers them; building an env imports
the simulator only then, and a Housekeep task without its data fails with the usual
error naming the missing files.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

NAMESPACE = "llmexplore"
VERSION = 0


def gym_id(task: str) -> str:
    """``nethack:staircase-lvl3`` -> ``llmexplore/NetHackStaircaseLvl3-v0`` (the family's title, the task)."""
    from llmexplore.envs.registry import find_family

    family, _, name = task.partition(":")
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    found = find_family(family)
    prefix = found.title if found else family.capitalize()
    return f"{NAMESPACE}/{prefix}{''.join(w[0].upper() + w[1:] for w in words)}-v{VERSION}"


def make_task_env(task: str, seed: int | None = None, extra_keys: Sequence[str] = (), **_: Any):
    """gymnasium's entry point: the task's env as the suite trains on it (before the training wrappers)."""
    from llmexplore.envs.registry import make_adapter

    adapter = make_adapter(task)
    adapter.validate_data()
    return adapter.make_env(seed=seed, extra_keys=tuple(extra_keys))


def register_gym_ids(tasks: Sequence[str]) -> dict[str, str]:
    """Register an id per task (again after a re-import is harmless); returns task -> id."""
    import gymnasium

    ids = {task: gym_id(task) for task in tasks}
    if len(set(ids.values())) != len(ids):
        raise ValueError("two tasks map to one gymnasium id")
    for task, env_id in ids.items():
        known = gymnasium.registry.get(env_id)
        if known is not None and known.kwargs.get("task") != task:
            taken_by = known.kwargs.get("task")
            raise ValueError(f"gymnasium id {env_id} of task '{task}' is taken by '{taken_by}'")
        if known is None:
            gymnasium.register(id=env_id, entry_point=make_task_env, kwargs={"task": task})
    return ids
