"""What a leaderboard shows, independent of its output format: the computed tables and the page's parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from llmexplore.benchmarks.results.aggregate import Collection, Run
from llmexplore.benchmarks.results.cross_task import AggregateScope


@dataclass
class Board:
    """Everything the leaderboard files show."""

    title: str
    found: Collection
    per_task: pd.DataFrame
    aggregate: pd.DataFrame
    achievements: pd.DataFrame
    tasks: list[str]
    #: which methods and tasks the aggregate ranks, and the methods it leaves out
    scope: AggregateScope = field(default_factory=lambda: AggregateScope((), (), {}, {}, ()))
    improvements: dict[str | None, pd.DataFrame] = field(default_factory=dict)
    reps: int = 2000
    images: dict[str | None, list[Path]] = field(default_factory=dict)
    #: the runs ranked: the counted ones less the inert (inert.py)
    runs: list[Run] = field(default_factory=list)
    #: inert runs, each with why; shown apart, never ranked
    inert: list[tuple[Run, str]] = field(default_factory=list)

    @property
    def has_aggregate(self) -> bool:
        """Whether the normalised runs span more than one task, so a reader looks for an aggregate."""
        return not self.aggregate.empty and len(self.scope.all_tasks) > 1


@dataclass(frozen=True)
class Table:
    """A table of runs made here; LaTeX folds the notes that follow it into its caption."""

    df: pd.DataFrame
    caption: str
    label: str  # LaTeX label (table_labels.py)
    show_index: bool = False
    #: LaTeX's short caption, with display names (empty: ``caption``)
    latex_caption: str = ""
    #: the cells shown in bold, as (column, row number): a best value separated from the rest (separation.py)
    bold: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Note:
    """A note under the table before it. A note that says the same under every table has ``once``: the text
    Markdown and HTML give once, at the top, instead; LaTeX keeps ``text`` under each table, since a paper
    may take any one of them."""

    text: str
    once: str | None = None
    #: False for a note about what only Markdown and HTML show (the plots)
    latex: bool = True


@dataclass(frozen=True)
class Reference:
    """Published results, always shown apart from the runs made here."""

    df: pd.DataFrame
    source: str
    label: str  # LaTeX label


@dataclass(frozen=True)
class Image:
    path: Path


Part = Table | Note | Reference | Image


@dataclass(frozen=True)
class Section:
    heading: str
    parts: list[Part]


def bold_cells(table: Table) -> dict[str, set[int]]:
    """Column -> the row numbers shown in bold."""
    out: dict[str, set[int]] = {}
    for column, row in table.bold:
        out.setdefault(column, set()).add(row)
    return out
