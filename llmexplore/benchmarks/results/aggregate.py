"""From run records to per-task tables, and each run's normalised score.

Per task and method (row label): mean +- standard error over seeds and the IQM with a
95% stratified-bootstrap interval of the task's benchmark metric (NetHack: BALROG
progression; Crafter: score over all training episodes within the budget; Housekeep:
rearrangement success, ``rearrange_success``), plus episode return and intrinsic return and the
family's extra columns. Across tasks, each task's metric is normalised by its family's published
reference points (``EnvFamily.normalization``); ``cross_task.py`` takes rliable's four aggregates of
those over the tasks the ranked methods share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from llmexplore.benchmarks.results.admission import cell_key, record_problem
from llmexplore.benchmarks.run.record import RECORD_FILE, RunRecord, read_record
from llmexplore.benchmarks.results.statistics import iqm, mean_and_se, stratified_bootstrap_ci
from llmexplore.envs.family import EnvFamily
from llmexplore.envs.registry import families, find_family
from llmexplore.errors import UserError


def normalization_notes(family_names: Iterable[str] | None = None) -> list[str]:
    """'<family> <metric>: <where the points come from>' for every family with reference points, or only for
    ``family_names`` (the families a table shows: a note about a family not in it only puzzles)."""
    shown = None if family_names is None else set(family_names)
    return [f"{f.name} {f.normalization.metric}: {f.normalization.note}"
            for f in families() if f.normalization is not None and (shown is None or f.name in shown)]


def extra_column_names() -> set[str]:
    """Every family's extra per-task columns (shown when present in final metrics)."""
    return {name for family in families() for name in family.extra_columns}


@dataclass
class Run:
    record: RunRecord
    path: Path

    @property
    def task(self) -> str:
        """The task the run trained on, as its record's spec names it (``family:task``)."""
        return self.record.spec.task

    @property
    def family(self) -> str:
        """The environment family: the task name up to its first colon."""
        return self.task.split(":", 1)[0]

    @property
    def family_info(self) -> EnvFamily | None:
        """The registered family (None for a record of a family this installation lacks)."""
        return find_family(self.family)

    @property
    def label(self) -> str:
        """The run's row in tables: its label, else its method."""
        return self.record.spec.row_label

    @property
    def seed(self) -> int:
        """The run's training seed: a (label, task) row aggregates over these."""
        return self.record.spec.seed

    def value(self, key: str) -> float:
        """A final metric by name; NaN when the record lacks it, so a missing value never counts as 0."""
        return float(self.record.final_metrics.get(key, float("nan")))


@dataclass
class Collection:
    """The runs a leaderboard counts, and every record it does not, each with its status and why."""

    runs: list[Run] = field(default_factory=list)
    #: {"path", "status" (unreadable, running, interrupted, failed, refused, duplicate), "cell", "why"}
    excluded: list[dict[str, Any]] = field(default_factory=list)


def collect(root: str | Path) -> Collection:
    """Every run record under ``root``: complete ones that pass ``admission.record_problem`` are counted
    (one per cell: a copy of a cell in a second folder is not a second seed), the rest listed."""
    out = Collection()
    counted: dict[str, Path] = {}
    for path in sorted(Path(root).rglob(RECORD_FILE)):
        folder = str(path.parent)
        try:
            record = read_record(path)
        except UserError as exc:
            out.excluded.append({"path": folder, "status": "unreadable", "cell": "", "why": str(exc)})
            continue
        if record.status != "complete":
            why = str((record.error or {}).get("message", ""))
            out.excluded.append({"path": folder, "status": record.status, "cell": record.cell, "why": why})
            continue
        problem = record_problem(record)
        if problem is not None:
            out.excluded.append({"path": folder, "status": "refused", "cell": record.cell, "why": problem})
            continue
        cell = cell_key(record.spec)
        if cell in counted:
            out.excluded.append({"path": folder, "status": "duplicate", "cell": record.cell,
                                 "why": f"the same cell as {counted[cell]}, counted once; keep one of the two "
                                        "folders under the runs folder"})
            continue
        counted[cell] = path.parent
        out.runs.append(Run(record, path.parent))
    return out


def _mean_over_all(values: list[float]) -> tuple[float, float]:
    """Mean and s.e. over every counted seed, or no value when one of them lacks it: a column's mean
    never uses fewer rows than the seed count beside it."""
    array = np.asarray(values, dtype=float)
    if array.size == 0 or np.isnan(array).any():
        return float("nan"), float("nan")
    return mean_and_se(array)


def per_task_table(runs: list[Run], reps: int = 2000) -> pd.DataFrame:
    """One row per (task, label): seeds, budget, the metric's mean, standard error and IQM with its
    bootstrap interval, and the mean env and intrinsic returns."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.task, run.label), []).append(run)
    rows = []
    for (task, label), group in sorted(groups.items()):
        metric = group[0].record.metric
        values = np.array([r.value(metric) for r in group])
        mean, se = mean_and_se(values)
        low, high = stratified_bootstrap_ci([values[~np.isnan(values)]], iqm, reps=reps)
        ret_mean, ret_se = _mean_over_all([r.value("return") for r in group])
        int_mean, int_se = _mean_over_all([r.value("intrinsic_return") for r in group])
        budgets = sorted({r.record.budget for r in group})
        row = {
            "task": task, "label": label, "method": group[0].record.spec.method, "seeds": len(group),
            "budget": budgets[0] if len(budgets) == 1 else f"{budgets[0]}-{budgets[-1]}",
            "metric": metric, "mean": mean, "se": se, "iqm": iqm(values), "iqm_low": low, "iqm_high": high,
            "return_mean": ret_mean, "return_se": ret_se, "intrinsic_return_mean": int_mean,
            "intrinsic_return_se": int_se,
        }
        info = group[0].family_info
        for column in info.extra_columns if info else ():
            row[column] = _mean_over_all([r.value(column) for r in group])[0]
        rows.append(row)
    return pd.DataFrame(rows)


def scores_table(runs: list[Run]) -> pd.DataFrame:
    """One row per run: its identity, budget, and every final metric (columns are the union over runs)."""
    rows = []
    for run in sorted(runs, key=lambda r: (r.task, r.label, r.seed)):
        record = run.record
        rows.append({
            "method": run.label, "method_name": record.spec.method, "task": run.task, "seed": run.seed,
            "budget": record.budget, "env_steps": record.env_steps, "metric": record.metric,
            "metric_value": run.value(record.metric), "normalized": normalized(run),
            "wall_seconds": record.wall_seconds, "run_dir": str(run.path),
            **{k: float(v) for k, v in sorted(record.final_metrics.items())},
        })
    fixed = ["method", "method_name", "task", "seed", "budget", "env_steps", "metric", "metric_value",
             "normalized", "wall_seconds", "run_dir"]
    return pd.DataFrame(rows, columns=fixed + sorted({k for r in rows for k in r} - set(fixed)))


def normalized(run: Run) -> float | None:
    """The run's metric scaled between its family's low and high reference points, or None without them."""
    info = run.family_info
    points = info.normalization if info else None
    if points is None or points.metric != run.record.metric:
        return None
    low = points.low_for(run.task)
    return (run.value(run.record.metric) - low) / (points.high - low)


def achievement_table(runs: list[Run]) -> pd.DataFrame:
    """Success rate (%) of each achievement, mean over seeds, per task and label, for the families that
    declare achievements (``EnvFamily.achievements``: Crafter's 22)."""
    rows = []
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        if run.family_info is not None and run.family_info.achievements:
            groups.setdefault((run.task, run.label), []).append(run)
    for (task, label), group in sorted(groups.items()):
        row: dict[str, Any] = {"task": task, "label": label, "seeds": len(group)}
        for name in group[0].family_info.achievements:
            row[name] = _mean_over_all([r.value(f"success_{name}") for r in group])[0]
        rows.append(row)
    # the columns even without such runs, so a leaderboard without them can look for its rows
    names = dict.fromkeys(name for family in families() for name in family.achievements)
    return pd.DataFrame(rows, columns=["task", "label", "seeds", *names])


def learning_curves(runs: list[Run], task: str, key: str) -> dict[str, pd.DataFrame]:
    """Per label: env steps -> mean and 95% bootstrap interval over seeds of a curve field."""
    out: dict[str, pd.DataFrame] = {}
    labels = sorted({r.label for r in runs if r.task == task})
    for label in labels:
        points: dict[int, list[float]] = {}
        for run in runs:
            if run.task != task or run.label != label:
                continue
            for point in run.record.curve:
                value = getattr(point, key)
                if value is not None:
                    points.setdefault(point.env_steps, []).append(value)
        rows = []
        for steps in sorted(points):
            values = np.array(points[steps])
            low, high = stratified_bootstrap_ci([values], np.mean, reps=500) if values.size > 1 else (values[0], values[0])
            rows.append({"env_steps": steps, "mean": float(values.mean()), "low": low, "high": high, "seeds": values.size})
        out[label] = pd.DataFrame(rows)
    return out
