"""Method registry: built-ins and third-party methods by name.

Third-party packages register methods through the entry-point group
``llmexplore.methods``; each entry point names an ``IntrinsicReward`` subclass
(``mypkg.module:MyMethod``). A module that is not installed (a script's, a notebook's)
is named in ``LLMEXPLORE_METHODS`` (comma-separated ``module:Class`` paths), like
``LLMEXPLORE_FAMILIES`` for environments; the processes a run spawns inherit it.
Adding a method never requires editing the runner. docs/EXTENDING.md is the guide.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import logging
import os
from importlib.metadata import entry_points
from typing import Any, Mapping

from pydantic import ValidationError

from llmexplore.errors import ConfigError, shown, validation_problems
from llmexplore.methods.base import IntrinsicReward, MethodOptions

ENTRY_POINT_GROUP = "llmexplore.methods"
#: methods of modules that are not installed: comma-separated ``module:Class`` paths
METHODS_ENV = "LLMEXPLORE_METHODS"

#: modules whose import registers the built-in methods
BUILTIN_MODULES = (
    "llmexplore.methods.none",
    "llmexplore.methods.rnd",
    "llmexplore.methods.apt",
    "llmexplore.methods.e3b",
    "llmexplore.methods.noveld",
    "llmexplore.methods.icm",
    "llmexplore.methods.motif.method",
    "llmexplore.methods.ellm.method",
    "llmexplore.methods.ellm.bow",
    "llmexplore.methods.oni.method",
    "llmexplore.methods.maestro.method",
)

_METHODS: dict[str, type[IntrinsicReward]] = {}
#: plugins that failed to load: entry-point name -> why (reported once, named again if asked for)
_BROKEN: dict[str, str] = {}
_loaded = False
log = logging.getLogger(__name__)
#: hooks of an older interface that no longer exist: their checks belong in ``check_run(run)``
RETIRED_HOOKS = ("check_task", "check_lm")


def register_method(cls: type[IntrinsicReward]) -> type[IntrinsicReward]:
    """Class decorator: make a method available under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, IntrinsicReward)):
        raise TypeError(f"{cls!r} is not an IntrinsicReward subclass")
    name = getattr(cls, "name", None)
    if not name or not isinstance(name, str):
        raise TypeError(f"{cls.__name__} must set a class attribute `name`")
    existing = _METHODS.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"method name '{name}' is taken by {existing.__module__}.{existing.__qualname__}")
    _refuse_retired_hooks(cls)
    _METHODS[name] = cls
    return cls


def _refuse_retired_hooks(cls: type[IntrinsicReward]) -> None:
    """Stop a method written for the older interface at registration, instead of silently never
    calling its checks: ``check_task(task, obs_space, options)``, ``check_lm(lm, options)`` and
    ``check_run(task, options, lm)`` became one ``check_run(run)``."""
    old = [hook for hook in RETIRED_HOOKS if any(hook in vars(k) for k in cls.__mro__)]
    positional = [p for p in inspect.signature(cls.check_run).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) > 1:
        old.append("check_run(task, options, lm)")
    if old:
        raise TypeError(
            f"method '{cls.name}' ({cls.__module__}.{cls.__qualname__}) overrides {', '.join(old)}, which "
            f"IntrinsicReward no longer calls: move those checks into one classmethod `check_run(cls, run)` "
            f"(run.task, run.obs_space, run.options, run.lm) that calls `super().check_run(run)` first")


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if not (isinstance(obj, type) and issubclass(obj, IntrinsicReward)):
                raise TypeError(f"{ep.value} is not an IntrinsicReward subclass")
            register_method(obj)
        except Exception as exc:  # a broken plugin must not break the built-ins or the other plugins
            why = f"{type(exc).__name__}: {exc}"
            _BROKEN[ep.name] = f"{ep.value}: {why}"
            log.warning("method plugin '%s' (%s) could not be loaded and is skipped: %s", ep.name, ep.value,
                        why)
    _register_named_in_variable()


def _register_named_in_variable() -> None:
    """Register the ``module:Class`` paths of LLMEXPLORE_METHODS; a path that does not name a method is an
    error naming it (the user asked for it by name, unlike an installed plugin that breaks)."""
    from llmexplore.envs.family import import_path

    for path in [p.strip() for p in os.environ.get(METHODS_ENV, "").split(",") if p.strip()]:
        try:
            obj = import_path(path)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"{METHODS_ENV} names '{path}', which cannot be imported: {exc}",
                              hint="give comma-separated module:Class paths importable from here (PYTHONPATH), "
                                   f"or unset {METHODS_ENV}") from None
        if not (isinstance(obj, type) and issubclass(obj, IntrinsicReward)):
            raise ConfigError(f"{METHODS_ENV} names '{path}', which is not an IntrinsicReward subclass",
                              hint="name the method's class (docs/EXTENDING.md)")
        try:
            register_method(obj)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{METHODS_ENV} names '{path}', which cannot be registered: {exc}") from None


def method_names() -> list[str]:
    """Every registered method name (plugins included), sorted."""
    _load_all()
    return sorted(_METHODS)


def list_methods() -> list[type[IntrinsicReward]]:
    """Every registered method class, sorted by name."""
    return [_METHODS[n] for n in method_names()]


def get_method(name: str) -> type[IntrinsicReward]:
    """A method class by name; a ConfigError suggesting close names (or why a plugin failed) otherwise."""
    _load_all()
    if name in _METHODS:
        return _METHODS[name]
    if name in _BROKEN:
        raise ConfigError(f"method plugin '{name}' could not be loaded ({_BROKEN[name]})",
                          hint="fix or reinstall the package that provides it")
    close = difflib.get_close_matches(name, _METHODS, n=3, cutoff=0.5)
    hint = ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else (
        "valid methods: " + ", ".join(sorted(_METHODS)))
    plugins = (f"; a method of your own is found once its package is installed (entry point group "
               f"'{ENTRY_POINT_GROUP}') or named in {METHODS_ENV}=module:Class (docs/EXTENDING.md)")
    raise ConfigError(f"unknown method {shown(name)}", hint=hint + plugins)


def parse_options(method: type[IntrinsicReward], values: Mapping[str, Any] | None) -> MethodOptions:
    """Validate a method's options, naming every bad key and value at once; a ``preset`` fills the options
    it sets that ``values`` leaves out."""
    values = dict(values or {})
    name = values.get("preset")
    if name is not None and method.presets:
        if name not in method.presets:
            raise ConfigError(f"method '{method.name}' has no preset {shown(name)}",
                              hint=f"its presets: {', '.join(sorted(method.presets))} (`llmexplore methods "
                                   f"{method.name}` says what each sets)")
        values = {**method.presets[name].options, **values}
    try:
        return method.Options(**values)
    except ValidationError as exc:
        problems = [f"{where}: {message}" for where, message in validation_problems(exc)]
        fields = ", ".join(method.Options.model_fields) or "(none)"
        raise ConfigError(
            f"bad options for method '{method.name}': " + "; ".join(problems),
            hint=f"options of '{method.name}': {fields}",
        ) from None
