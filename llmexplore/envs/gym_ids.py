"""gymnasium ids for every task: ``gymnasium.make("llmexplore/NetHackScore-v0")``.

gymnasium reads a colon in an id as ``module:name``, so the task names (``nethack:score``)
cannot serve as ids; each id is the task name in CamelCase under the ``llmexplore``
namespace, version 0. Importing ``llmexplore.envs`` registers them (``envs/registry.py`` names each
family's tasks here, with its entry point ``make_task_env``); building an env imports
the simulator only then, and a Housekeep task without its data fails with the usual
error naming the missing files.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

NAMESPACE = "llmexplore"
VERSION = 0


def gym_id(task: str, title: str | None = None) -> str:
    """``nethack:staircase-lvl3`` of the family titled ``NetHack`` -> ``llmexplore/NetHackStaircaseLvl3-v0``
    (without a title, the family's name capitalised)."""
    family, _, name = task.partition(":")
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    prefix = title or family.capitalize()
    return f"{NAMESPACE}/{prefix}{''.join(w[0].upper() + w[1:] for w in words)}-v{VERSION}"


def register_gym_ids(tasks: Sequence[str], title: str | None,
                     entry_point: Callable[..., Any]) -> dict[str, str]:
    """Register an id per task of one family (again after a re-import is harmless), each made by
    ``entry_point(task=...)``; returns task -> id."""
    import gymnasium

    ids = {task: gym_id(task, title) for task in tasks}
    if len(set(ids.values())) != len(ids):
        raise ValueError("two tasks map to one gymnasium id")
    for task, env_id in ids.items():
        known = gymnasium.registry.get(env_id)
        if known is not None and known.kwargs.get("task") != task:
            taken_by = known.kwargs.get("task")
            raise ValueError(f"gymnasium id {env_id} of task '{task}' is taken by '{taken_by}'")
        if known is None:
            gymnasium.register(id=env_id, entry_point=entry_point, kwargs={"task": task})
    return ids
