"""Where data lives: the files shipped in the package, and a data folder for fetched datasets.

Small published figures ship with the package (``llmexplore/data/packaged``, listed in its
``SOURCES.md``); a family reads them through ``packaged_path`` and says itself how another
copy is chosen. Larger third-party datasets (``llmexplore.data.catalog``) are fetched with
``llmexplore data fetch NAME`` into the data folder: ``LLMEXPLORE_DATA``, else
``$XDG_CACHE_HOME/llmexplore/data`` (default ``~/.cache/llmexplore/data``), laid out as
``<folder>/<dataset>/``. Each can also be pointed at directly with its own variable (named
in the catalog). When ``LLMEXPLORE_DATA`` is unset and a dataset is not in the cache, a
development checkout also finds it in a ``shared/data`` folder beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from llmexplore.errors import DataError

DATA_ENV = "LLMEXPLORE_DATA"
PACKAGED = Path(__file__).resolve().parent / "data" / "packaged"


def default_data_home() -> Path:
    """Where datasets go when nothing else says: ``$XDG_CACHE_HOME/llmexplore/data`` (default ~/.cache)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "llmexplore" / "data"


def data_home() -> Path:
    """The folder ``llmexplore data fetch`` writes into and datasets are read from."""
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else default_data_home()


def _dev_data_root() -> Path | None:
    """``shared/data`` beside a development checkout; never consulted when LLMEXPLORE_DATA is set."""
    candidate = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def packaged_path(relative: str) -> Path:
    """A file shipped inside the package (see ``llmexplore/data/packaged/SOURCES.md``)."""
    return PACKAGED / relative


def data_path(dataset: str, *, must_exist: bool = True) -> Path:
    """Path of one fetched dataset (file or folder), or a DataError naming the command that fetches it."""
    from llmexplore.data.catalog import dataset as find_dataset, fetch_command

    info = find_dataset(dataset)
    override = os.environ.get(info.env_var)
    if override:
        path = Path(override).expanduser()
    else:
        path = data_home() / dataset
        dev = _dev_data_root()
        if not path.exists() and DATA_ENV not in os.environ and dev is not None and (dev / dataset).exists():
            path = dev / dataset
    if must_exist and not path.exists():
        raise DataError(
            f"{info.description} ({info.source}) not found at {path}",
            hint=f"run `{fetch_command(dataset)}` (offline: add --from <folder or URL of a copy>), "
                 f"or set {info.env_var}=<folder holding it>",
        )
    return path
