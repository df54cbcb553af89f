"""Family and task registry: names like ``nethack:score`` map to a TaskSpec, its family and adapter class.

Families (``envs/family.py``) and their tasks are plain data, so listing tasks never imports
NLE or Crafter; adapter classes are imported when a task is used, with an error naming the
extra to install if the simulator is missing.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from typing import Any, Iterable, Sequence

from llmexplore.envs.base import EnvAdapter, TaskSpec
from llmexplore.envs.family import EnvFamily, Network, import_path
from llmexplore.envs.gym_ids import gym_id as task_gym_id
from llmexplore.envs.gym_ids import register_gym_ids
from llmexplore.errors import ConfigError, MissingExtraError, shown

_TASKS: dict[str, TaskSpec] = {}
_FAMILIES: dict[str, EnvFamily] = {}
#: task name -> gymnasium id, kept current as families come and go (``envs.GYM_IDS`` is this dict)
GYM_IDS: dict[str, str] = {}
#: families outside the package: an entry-point group, and a variable for modules that are not installed
ENTRY_POINT_GROUP = "llmexplore.envs"
FAMILIES_ENV = "LLMEXPLORE_FAMILIES"
#: families every process registers when it imports ``llmexplore.envs`` (built-in and plugins)
_AT_IMPORT: set[str] = set()


def register_family(family: EnvFamily) -> EnvFamily:
    """Make a family, its tasks and their gymnasium ids available: the one line a new family adds."""
    if _FAMILIES.get(family.name) is family:
        return family  # again, e.g. from LLMEXPLORE_FAMILIES in the process that set it
    if family.name in _FAMILIES:
        raise ValueError(f"family '{family.name}' is already registered")
    taken = [n for n in (net.name for net in family.networks.values()) if find_network(n) is not None]
    taken += [t.name for t in family.tasks if t.name in _TASKS]
    if taken:
        raise ValueError(f"network or task name(s) {', '.join(taken)} of family '{family.name}' are taken")
    _FAMILIES[family.name] = family
    for task in family.tasks:
        register_task(task)
    GYM_IDS.update(register_gym_ids([t.name for t in family.tasks], family.title, make_task_env))
    return family


def register_plugin_families() -> None:
    """Register the families named outside the package, in every process that imports ``llmexplore.envs``.

    Installed packages name theirs in the entry-point group ``llmexplore.envs``; a module that is
    not installed (a script's, a test's) is named in ``LLMEXPLORE_FAMILIES`` (comma-separated
    ``module:FAMILY`` paths), which the processes a run spawns (sample-factory's env probe, rollout
    workers, evaluation workers) inherit.
    """
    import os
    from importlib.metadata import entry_points

    paths = [p.strip() for p in os.environ.get(FAMILIES_ENV, "").split(",") if p.strip()]
    for path in paths:
        try:
            family = import_path(path)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"{FAMILIES_ENV} names '{path}', which cannot be imported: {exc}",
                              hint="give comma-separated module:FAMILY paths importable from here, or unset "
                                   f"{FAMILIES_ENV}") from None
        register_family(family)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register_family(ep.load())
        except Exception as exc:  # a broken plugin must not break the built-in families
            warnings.warn(f"environment family plugin '{ep.name}' ({ep.value}) is skipped: "
                          f"{type(exc).__name__}: {exc}", stacklevel=2)
    _AT_IMPORT.update(_FAMILIES)  # every new process that imports llmexplore.envs registers these


def _named_outside() -> list[str]:
    """The ``module:FAMILY`` paths of ``LLMEXPLORE_FAMILIES`` and of the entry-point group."""
    import os
    from importlib.metadata import entry_points

    paths = [p.strip() for p in os.environ.get(FAMILIES_ENV, "").split(",") if p.strip()]
    return paths + [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]


def require_in_new_processes(name: str) -> None:
    """Stop before training when a new process (sample-factory's env probe, its workers) would not know
    the family: one registered by a call only, in this process."""
    family = get_family(name)
    if name in _AT_IMPORT:
        return
    for path in _named_outside():
        try:
            if import_path(path) is family:
                return
        except Exception:  # a path that does not import names no family (import reports it)
            continue
    raise ConfigError(f"environment family '{name}' is registered in this process only; training starts new "
                      "processes, which would not know it",
                      hint=f"name it in {FAMILIES_ENV}=<module>:<FAMILY> or in the entry-point group "
                           f"{ENTRY_POINT_GROUP}")


def unregister_family(name: str) -> None:
    """Forget a family and its tasks (for tests that register one of their own)."""
    _FAMILIES.pop(name, None)
    for task in [t for t in _TASKS.values() if t.family == name]:
        del _TASKS[task.name]
        GYM_IDS.pop(task.name, None)


def register_task(spec: TaskSpec) -> None:
    """Add a task of an already registered family; a name given twice is an error."""
    if spec.family not in _FAMILIES:
        raise ValueError(f"register the family '{spec.family}' before its tasks")
    if spec.name in _TASKS:
        raise ValueError(f"task '{spec.name}' is already registered")
    _TASKS[spec.name] = spec


def families() -> list[EnvFamily]:
    """Every registered family, in registration order."""
    return list(_FAMILIES.values())


def find_family(name: str) -> EnvFamily | None:
    """The family of that name, or None (records can name a family this installation lacks)."""
    return _FAMILIES.get(name)


def get_family(name: str) -> EnvFamily:
    """A registered family by name; a ConfigError naming the registered ones otherwise."""
    if name in _FAMILIES:
        return _FAMILIES[name]
    raise ConfigError(f"unknown environment family {shown(name)}",
                      hint="registered families: " + ", ".join(_FAMILIES))


def find_network(name: str) -> Network | None:
    """The network an encoder name in run settings or a checkpoint stands for, or None."""
    for family in _FAMILIES.values():
        for network in family.networks.values():
            if network.name == name:
                return network
    return None


def task_names() -> list[str]:
    """Every registered task name, sorted."""
    return sorted(_TASKS)


def list_tasks() -> list[TaskSpec]:
    """Every registered task, sorted by name."""
    return [_TASKS[n] for n in task_names()]


def get_task(name: str) -> TaskSpec:
    """A registered task by name; a ConfigError suggesting close names otherwise."""
    if name in _TASKS:
        return _TASKS[name]
    raise ConfigError(f"unknown task {shown(name)}", hint=_suggest(name, _TASKS))


def adapter_class(family: str) -> type[EnvAdapter]:
    """A family's adapter class, imported on first use; names the extra to install when its simulator is
    missing."""
    found = get_family(family)
    try:
        importlib.import_module(found.probe_module)
    except ImportError as exc:
        raise MissingExtraError(found.probe_module, found.extra, f"the '{family}' environments") from exc
    return import_path(found.adapter)


def make_adapter(task: str | TaskSpec) -> EnvAdapter:
    """The adapter of a task (by name or spec), ready to make envs."""
    spec = get_task(task) if isinstance(task, str) else task
    return adapter_class(spec.family)(spec)


def make_task_env(task: str, seed: int | None = None, extra_keys: Sequence[str] = (), **_: Any):
    """gymnasium's entry point: the task's env as the suite trains on it (before the training wrappers)."""
    adapter = make_adapter(task)
    adapter.validate_data()
    return adapter.make_env(seed=seed, extra_keys=tuple(extra_keys))


def gym_id(task: str) -> str:
    """A task's gymnasium id: ``nethack:score`` -> ``llmexplore/NetHackScore-v0`` (its family's title)."""
    found = find_family(task.partition(":")[0])
    return task_gym_id(task, found.title if found else None)


def _suggest(name: str, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "? (`llmexplore envs` lists all tasks)"
    return "valid tasks: " + ", ".join(known)
