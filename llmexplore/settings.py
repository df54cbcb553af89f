"""Where external data lives: settings and environment variables, never bundled files.

The suite reads third-party data (BALROG's progression table, Crafter's published
episode stats, Housekeep's annotations and episodes) from a data directory laid out as
``<root>/balrog/achievements.json``, ``<root>/crafter/*.json``, ``<root>/housekeep/``.

Resolution order for the root: ``LLMEXPLORE_DATA``, then ``./data``, then the
``shared/data`` folder beside this checkout (the team's development layout). Each
dataset can also be pointed at directly with its own variable.
"""

from __future__ import annotations

import os
from pathlib import Path

from llmexplore.errors import DataError

DATA_ENV = "LLMEXPLORE_DATA"

_SOURCES = {
    "balrog": (
        "LLMEXPLORE_BALROG_TABLE",
        "balrog/achievements.json",
        "BALROG's NetHack progression table (achievements.json from github.com/balrog-ai/BALROG, MIT)",
    ),
    "crafter": (
        "LLMEXPLORE_CRAFTER_REFERENCE",
        "crafter",
        "Crafter's published episode stats (the scores/*.json files of github.com/danijar/crafter, MIT)",
    ),
    "housekeep": (
        "LLMEXPLORE_HOUSEKEEP_DATA",
        "housekeep",
        "Housekeep's annotations and episodes (amt_data/ and episodes/ of github.com/yashkant/housekeep, MIT)",
    ),
}


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def data_root() -> Path | None:
    """The data directory, or None when none of the usual places exists."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    for candidate in (Path.cwd() / "data", _repo_root().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return None


def data_path(dataset: str, *, must_exist: bool = True) -> Path:
    """Path of one dataset (file or folder), with a clear error naming where it comes from."""
    var, relative, source = _SOURCES[dataset]
    override = os.environ.get(var)
    if override:
        path = Path(override).expanduser()
    else:
        root = data_root()
        path = (root / relative) if root is not None else Path(relative)
    if must_exist and not path.exists():
        raise DataError(
            f"{source} not found at {path}",
            hint=f"download it and set {var}=<path>, or set {DATA_ENV}=<folder containing {relative}>",
        )
    return path
