"""Import minihack where setuptools no longer ships ``pkg_resources``.

minihack 1.0.2 calls ``pkg_resources.resource_filename`` three times at import, to find files
inside the installed ``minihack`` and ``nle`` packages. setuptools 81 and later no longer
install ``pkg_resources``; rather than pin an old setuptools for the whole environment, a
module of that name offering only ``resource_filename`` (answered by ``importlib.resources``)
is put in ``sys.modules`` when, and only when, the real one cannot be imported, and taken out
again once minihack is imported (minihack calls it at import only; a lasting stand-in would
mislead other code that probes ``sys.modules`` for setuptools' module, such as pytest's
``syspath_prepend``, which then asks it for ``fixup_namespace_packages``). Importing this
module imports minihack (the family's ``probe_module``), so every process that builds a
MiniHack env goes through here first.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
import sys
import types


def resource_filename(package: str, resource: str) -> str:
    """``pkg_resources.resource_filename`` for packages installed as plain folders (minihack, nle)."""
    return os.path.join(str(importlib.resources.files(package)), resource)


def ensure_pkg_resources() -> types.ModuleType | None:
    """Leave a working ``pkg_resources`` alone; otherwise provide the one function minihack calls.

    Returns the stand-in when one was installed, so the caller can take it out again."""
    if "pkg_resources" in sys.modules:
        return None
    try:
        importlib.import_module("pkg_resources")
    except ImportError:
        shim = types.ModuleType("pkg_resources")
        shim.__doc__ = "llmexplore's stand-in: resource_filename only (see llmexplore.envs.minihack.compat)"
        shim.resource_filename = resource_filename  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = shim
        return shim
    return None


def import_minihack() -> types.ModuleType:
    """Import minihack through a stand-in ``pkg_resources`` that lives only as long as the import."""
    shim = ensure_pkg_resources()
    try:
        return importlib.import_module("minihack")
    finally:
        if shim is not None and sys.modules.get("pkg_resources") is shim:
            del sys.modules["pkg_resources"]


def minigrid_installed() -> bool:
    """Whether the ``minigrid`` package (MultiRoom's level generator) can be imported."""
    try:
        importlib.import_module("minigrid")
    except ImportError:
        return False
    return True


minihack = import_minihack()  # registers MiniHack's gymnasium ids

MINIHACK_VERSION: str = getattr(minihack, "__version__", "unknown")
