"""Task registry: names like ``nethack:score`` map to a TaskSpec and an adapter class.

The task table is plain data so that listing tasks never imports NLE or Crafter;
adapter classes are imported when a task is used, with an error naming the extra to
install if the simulator is missing.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Iterable

from llmexplore.envs.base import EnvAdapter, TaskSpec
from llmexplore.errors import ConfigError, MissingExtraError

_TASKS: dict[str, TaskSpec] = {}
_ADAPTERS: dict[str, tuple[str, str, str]] = {}  # family -> (module:class, pip extra, module to probe)


def register_family(family: str, adapter: str, extra: str, probe_module: str) -> None:
    """Declare an adapter class by dotted path (``pkg.module:Class``)."""
    _ADAPTERS[family] = (adapter, extra, probe_module)


def register_task(spec: TaskSpec) -> None:
    if spec.family not in _ADAPTERS:
        raise ValueError(f"register the family '{spec.family}' before its tasks")
    if spec.name in _TASKS:
        raise ValueError(f"task '{spec.name}' is already registered")
    _TASKS[spec.name] = spec


def task_names() -> list[str]:
    return sorted(_TASKS)


def list_tasks() -> list[TaskSpec]:
    return [_TASKS[n] for n in task_names()]


def get_task(name: str) -> TaskSpec:
    if name in _TASKS:
        return _TASKS[name]
    raise ConfigError(f"unknown task '{name}'", hint=_suggest(name, _TASKS))


def adapter_class(family: str) -> type[EnvAdapter]:
    path, extra, probe = _ADAPTERS[family]
    try:
        importlib.import_module(probe)
    except ImportError as exc:
        raise MissingExtraError(probe, extra, f"the '{family}' environments") from exc
    module, cls = path.split(":")
    return getattr(importlib.import_module(module), cls)


def make_adapter(task: str | TaskSpec) -> EnvAdapter:
    spec = get_task(task) if isinstance(task, str) else task
    return adapter_class(spec.family)(spec)


def _suggest(name: str, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "? (`llmexplore envs` lists all tasks)"
    return "valid tasks: " + ", ".join(known)
