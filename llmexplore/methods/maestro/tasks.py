"""The zero-shot evaluation tasks, as ``llmexplore.envs.nethack.zero_shot`` registers them.

That module (built beside this one) maps task names (``gnomish-mines``, ``delphi``, ...) to
frozen records with ``name``, ``task`` (the registered env task, e.g. ``nethack:gnomish-mines``,
whose episodes report ``success``), ``category`` and ``prompt`` (the goal text the LM writes a
policy over skills from). It is imported when needed, so this package works without it.
"""

from __future__ import annotations

from typing import Any, Mapping

from llmexplore.errors import ConfigError, shown

ZERO_SHOT_MODULE = "llmexplore.envs.nethack.zero_shot"
#: the published task names our oracle has reference policies for
PUBLISHED_TASKS = ("gnomish-mines", "delphi", "minetown", "transaction", "price-id", "buc-id", "golden-exit",
                   "level-up-and-sell", "discovery-hunger")


def zero_shot_tasks() -> Mapping[str, Any]:
    """Name -> task record; empty when the zero-shot task module is not installed."""
    import importlib

    try:
        module = importlib.import_module(ZERO_SHOT_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name in (ZERO_SHOT_MODULE, ZERO_SHOT_MODULE.rsplit(".", 1)[0]):
            return {}
        raise
    return dict(getattr(module, "ZERO_SHOT_TASKS", {}))


def get_zero_shot_task(name: str) -> Any:
    """The zero-shot task record named ``name``; ConfigError when it is unknown or no tasks are installed."""
    tasks = zero_shot_tasks()
    if not tasks:
        raise ConfigError(f"unknown zero-shot task {shown(name)}: no zero-shot tasks are installed "
                          f"({ZERO_SHOT_MODULE} is missing)")
    if name not in tasks:
        raise ConfigError(f"unknown zero-shot task {shown(name)}", hint=f"tasks: {', '.join(sorted(tasks))}")
    return tasks[name]
