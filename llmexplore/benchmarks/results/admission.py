"""Which complete run records a leaderboard may count, and why it refuses the others.

A record is a file anyone can copy, edit or damage, and the leaderboard once counted whatever
said ``"status": "complete"``: a cell copied into a second folder as a second seed, a record whose
cell name says one run and whose spec another, a "complete" run with 10 of its 4,096 env steps,
NaN, infinite, enormous (``statistics.MAX_MAGNITUDE``) or impossible metric values (a 200% Crafter score),
tasks no family knows. Every
record is checked here before aggregation; a refused one is listed with the reason and the fix in
every leaderboard output, and counts nowhere (seed counts and means use the same rows).
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase
from typing import Any

from llmexplore.benchmarks.results.statistics import MAX_MAGNITUDE
from llmexplore.benchmarks.run.record import CurvePoint, RecordedSpec, RunRecord
from llmexplore.envs.registry import find_family, task_names

#: ranges every family's final metrics keep (``fnmatch`` patterns; a family adds its own)
COMMON_RANGES: dict[str, tuple[float, float]] = {"episodes": (1.0, math.inf), "length": (0.0, math.inf)}
_MOVE_OUT = "move the record out of the runs folder, or rerun the cell"


def cell_key(spec: RecordedSpec) -> str:
    """``label/task/seed<N>``, as ``run.spec.cell_id`` names a cell (from a record's spec)."""
    return spec.cell


def record_problem(record: RunRecord) -> str | None:
    """Why a complete record must not be counted (the problem, then the fix), or None. (A spec without a
    valid method, task or seed does not read at all: ``RecordedSpec``.)"""
    spec = record.spec
    task = spec.task
    if task not in task_names():
        family = find_family(task.split(":", 1)[0])
        fix = ("install the plugin that registers the task" if family is None
               else f"the family {family.name} has the tasks {', '.join(t.name for t in family.tasks)}")
        return f"unknown task {task!r}; {fix}, or {_MOVE_OUT}"
    if record.cell != cell_key(spec):
        return (f"its cell name {record.cell!r} disagrees with its spec ({cell_key(spec)}): the record was "
                f"edited or copied from another cell; {_MOVE_OUT}")
    if spec.steps is not None and spec.steps != record.budget:
        return f"its budget {record.budget:,} disagrees with its spec's steps {spec.steps!r}; {_MOVE_OUT}"
    if record.budget <= 0 or record.env_steps < record.budget:
        return (f"it says complete but trained {record.env_steps:,} of its {record.budget:,} env steps; "
                f"rerun the cell to finish it (a rerun resumes from its last checkpoint)")
    family = find_family(task.split(":", 1)[0])
    if family is not None and family.metric is not None and record.metric != family.metric:
        return (f"its metric {record.metric!r} is not its family's benchmark metric {family.metric!r}; "
                f"{_MOVE_OUT}")
    if record.metric not in record.final_metrics:
        return f"it has no final value of its metric {record.metric!r} (no episode ended?); {_MOVE_OUT}"
    ranges = {**COMMON_RANGES, **(family.metric_ranges if family is not None else {})}
    for name, value in sorted(record.final_metrics.items()):
        problem = _value_problem(name, value, ranges)
        if problem:
            return f"{problem}; {_MOVE_OUT}"
    problem = _curve_problem(record.curve)
    if problem:
        return f"{problem}; {_MOVE_OUT}"
    if not math.isfinite(record.wall_seconds) or record.wall_seconds < 0:
        return f"its wall_seconds {record.wall_seconds!r} is not a duration; {_MOVE_OUT}"
    return None


def _value_problem(name: str, value: float, ranges: dict[str, tuple[float, float]]) -> str | None:
    if not math.isfinite(value):
        return f"its final {name} is {value!r}, not a finite number"
    if abs(value) > MAX_MAGNITUDE:
        return (f"its final {name} is {value:g}, beyond ±{MAX_MAGNITUDE:g}, the largest magnitude a sound run "
                f"reaches and the statistics take")
    for pattern, (low, high) in ranges.items():
        if fnmatchcase(name, pattern) and not low <= value <= high:
            return f"its final {name} is {value:g}, outside the possible range [{low:g}, {high:g}]"
    return None


def _curve_problem(curve: list[CurvePoint]) -> str | None:
    """The first learning-curve value the leaderboard's curves could not average (not finite, or beyond
    ``MAX_MAGNITUDE``); a bin without episodes holds None, which is fine."""
    for point in curve:
        for name in ("episode_return", "intrinsic_return", "metric"):
            value = getattr(point, name)
            if value is not None and not (math.isfinite(value) and abs(value) <= MAX_MAGNITUDE):
                return (f"its learning curve's {name} at {point.env_steps:,} env steps is {value!r}, not a "
                        f"finite number within ±{MAX_MAGNITUDE:g}")
    return None
