"""Comparisons between methods beyond point estimates (Agarwal et al., 2021).

Probability of improvement P(X > Y) for every pair of row labels, on each task (raw
benchmark metric) and across tasks (mean of the per-task values over the tasks both
labels ran, over the aggregate's ranked methods and tasks: ``cross_task.aggregate_scope``), with
stratified-bootstrap intervals; and performance profiles: the
fraction of runs whose score exceeds each threshold, with bootstrap bands.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from llmexplore.benchmarks.results.aggregate import Run, normalized
from llmexplore.benchmarks.results.cross_task import aggregate_scope
from llmexplore.benchmarks.results.statistics import (
    performance_profile,
    performance_profile_band,
    probability_of_improvement,
    probability_of_improvement_ci,
)

PROFILE_POINTS = 101


def _values_by_label_and_task(runs: list[Run], task: str | None) -> dict[str, dict[str, np.ndarray]]:
    """Label -> task -> its runs' scores: on ``task`` the raw metric; across tasks (None) the normalised
    score of the runs the aggregate ranks, so every comparison across tasks is over the same tasks."""
    chosen = aggregate_scope(runs).runs(runs) if task is None else [r for r in runs if r.task == task]
    out: dict[str, dict[str, list[float]]] = {}
    for run in chosen:
        value = normalized(run) if task is None else run.value(run.record.metric)
        if value is None or np.isnan(value):
            continue
        out.setdefault(run.label, {}).setdefault(run.task, []).append(value)
    return {label: {task: np.array(v) for task, v in tasks.items()} for label, tasks in out.items()}


def improvement_table(runs: list[Run], task: str | None = None, reps: int = 2000) -> pd.DataFrame:
    """P(X > Y) with its interval for each pair of labels, on ``task`` or (None) across tasks.

    Across tasks the scores are normalised (each family's EnvFamily.normalization), which does not change
    the per-task order, so the per-task values are the same; only the aggregate's ranked methods and tasks
    count (``cross_task.aggregate_scope``).
    """
    values = _values_by_label_and_task(runs, task)
    rows = []
    for x, y in combinations(sorted(values), 2):
        shared = sorted(set(values[x]) & set(values[y]))
        if not shared:
            continue
        xs, ys = [values[x][t] for t in shared], [values[y][t] for t in shared]
        low, high = probability_of_improvement_ci(xs, ys, reps=reps)
        rows.append({"x": x, "y": y, "tasks": len(shared), "x_runs": sum(a.size for a in xs),
                     "y_runs": sum(a.size for a in ys), "fewest_runs": min(a.size for a in xs + ys),
                     "p_improvement": probability_of_improvement(xs, ys), "low": low, "high": high})
    return pd.DataFrame(rows, columns=["x", "y", "tasks", "x_runs", "y_runs", "fewest_runs", "p_improvement", "low",
                                       "high"])


def fewest_runs_per_task(runs: list[Run], task: str | None = None) -> int:
    """The smallest number of runs any label has on one task (``task`` or, None, all normalised tasks): what the
    bootstrap bands of the profiles may be called."""
    values = _values_by_label_and_task(runs, task)
    counts = [a.size for tasks in values.values() for a in tasks.values()]
    return min(counts) if counts else 0


def profile_curves(runs: list[Run], task: str | None = None, reps: int = 2000) -> dict[str, pd.DataFrame]:
    """Per label: thresholds -> fraction of runs above, with a stratified-bootstrap band.

    One threshold grid for all labels (from the lowest to the highest score seen), so the
    curves can share axes.
    """
    values = _values_by_label_and_task(runs, task)
    every = np.concatenate([a for tasks in values.values() for a in tasks.values()]) if values else np.array([])
    if every.size == 0:
        return {}
    low_end, high_end = float(every.min()), float(every.max())
    if high_end == low_end:
        low_end, high_end = low_end - 0.5, high_end + 0.5
    thresholds = np.linspace(low_end, high_end, PROFILE_POINTS)
    out = {}
    for label, tasks in sorted(values.items()):
        strata = list(tasks.values())
        low, high = performance_profile_band(strata, thresholds, reps=reps)
        out[label] = pd.DataFrame({"threshold": thresholds, "fraction": performance_profile(strata, thresholds),
                                   "low": low, "high": high})
    return out
