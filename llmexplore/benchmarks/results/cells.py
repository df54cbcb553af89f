"""How a leaderboard writes a number, an interval and a seed count, and the notes that say what they are."""

from __future__ import annotations

import math
from typing import Any

from llmexplore.benchmarks.results.statistics import FEW_RUNS, interval_is_ci, interval_meaning, interval_name

#: below this many seeds (runs in a task) a cell is marked and its interval explained (Agarwal et al. 2021)
FEW_SEEDS = FEW_RUNS
FEW_MARK = "†"


def num(x: Any, digits: int = 2) -> str:
    """A number with thousands separators, '–' for a missing one."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}" if isinstance(x, (int, float)) else str(x)


def plus_minus(mean: float, se: float, digits: int = 2) -> str:
    """'mean ± se', or the mean alone without an error."""
    return num(mean, digits) if math.isnan(se) else f"{num(mean, digits)} ± {num(se, digits)}"


def with_interval(point: float, low: float, high: float, digits: int = 2, fewest_runs: int | None = None) -> str:
    """'point [low, high]', marked when the interval rests on fewer than FEW_RUNS runs in a task."""
    if isinstance(low, float) and math.isnan(low):
        return f"{num(point, digits)} (no interval)"
    mark = FEW_MARK if fewest_runs is not None and not interval_is_ci(fewest_runs) else ""
    return f"{num(point, digits)} [{num(low, digits)}, {num(high, digits)}]{mark}"


def seeds_cell(n: int) -> str:
    """A seed count, marked below FEW_SEEDS."""
    return f"{n}{FEW_MARK}" if n < FEW_SEEDS else str(n)


def interval_notes(fewest_runs: list[int], reps: int = 2000) -> list[str]:
    """The note under every table with intervals: what its intervals are, and for marked cells what they are not."""
    counts = [int(n) for n in fewest_runs]
    what = (f"Intervals: 2.5th-97.5th percentile of {reps:,} stratified-bootstrap resamples (runs resampled with "
            "replacement within each task).")
    few = sorted({n for n in counts if not interval_is_ci(n)})
    if not few:
        return [what + f" Every cell has at least {FEW_RUNS} runs per task: 95% confidence intervals."]
    return [what + f" {FEW_MARK} fewer than {FEW_RUNS} runs in a task: not a 95% confidence interval. "
            + " ".join(interval_meaning(n) for n in few)]


def interval_header(name: str, fewest_runs: list[int]) -> str:
    """'<name> [95% CI]' only when every cell may be called so, else '<name> [interval]'."""
    return f"{name} [{interval_name(fewest_runs)}]"


def band_name(fewest_runs: int) -> str:
    """A profile plot's band: a 95% band only with enough runs in every task."""
    if fewest_runs < 2:
        return "no band: one run in a task"
    if interval_is_ci(fewest_runs):
        return "95% stratified-bootstrap band"
    return f"bootstrap band of {fewest_runs} runs in a task: not a 95% band"
