"""BALROG's NetHack progression metric.

BALROG publishes, for each dungeon depth ``Dlvl:N`` and experience level ``Xp:N``, the
share of human games that reached it and went on to ascend. An episode's progression is
the largest table value over every depth and experience level it reached; BALROG reports
it in percent, and so do we. The table ships with the package; ``LLMEXPLORE_BALROG_TABLE``
points at another copy.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from llmexplore.errors import DataError
from llmexplore.settings import packaged_path

TABLE_ENV = "LLMEXPLORE_BALROG_TABLE"
TABLE_SOURCE = ("BALROG's NetHack progression table (achievements.json from github.com/balrog-ai/BALROG, "
                "MIT; shipped in llmexplore/data/packaged/balrog)")


def table_path(*, must_exist: bool = True) -> Path:
    """The progression table: ``LLMEXPLORE_BALROG_TABLE``, else the copy shipped with the package."""
    override = os.environ.get(TABLE_ENV)
    path = Path(override).expanduser() if override else packaged_path("balrog/achievements.json")
    if must_exist and not path.exists():
        raise DataError(f"{TABLE_SOURCE} not found at {path}",
                        hint=f"unset {TABLE_ENV} to use the copy shipped with llmexplore")
    return path


@lru_cache(maxsize=4)
def load_table(path: str | None = None) -> dict[str, float]:
    """BALROG's table, ``Dlvl:N`` / ``Xp:N`` -> share of ascending games, a fraction,
    from ``path`` or ``table_path()``; cached. DataError when unreadable."""
    file = Path(path) if path else table_path()
    try:
        table = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read BALROG progression table {file}: {exc}") from exc
    if not isinstance(table, dict) or not any(k.startswith("Dlvl:") for k in table):
        raise DataError(f"{file} is not BALROG's progression table (expected keys like 'Dlvl:3', 'Xp:5')")
    return {str(k): float(v) for k, v in table.items()}


class ProgressionTracker:
    """Tracks the best table value reached in one episode; cheap per step."""

    def __init__(self, table: dict[str, float]):
        self._table = table
        self.reset()

    def reset(self) -> None:
        """Start a new episode: nothing reached yet."""
        self.best = 0.0
        self._last_depth = -1
        self._last_xl = -1

    def update(self, depth: int, experience_level: int) -> None:
        """Take in the hero's current depth and experience level; the table is read only when one of them changed."""
        if depth != self._last_depth:
            self._last_depth = depth
            self.best = max(self.best, self._table.get(f"Dlvl:{depth}", 0.0))
        if experience_level != self._last_xl:
            self._last_xl = experience_level
            self.best = max(self.best, self._table.get(f"Xp:{experience_level}", 0.0))

    @property
    def percent(self) -> float:
        """The best table value reached this episode, in percent (0 to 100)."""
        return 100.0 * self.best
