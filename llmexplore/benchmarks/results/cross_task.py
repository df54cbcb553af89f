"""The aggregate across tasks compares like with like: it ranks a set of methods over the same tasks.

A method that ran more tasks than the others would otherwise be averaged over tasks the others never
saw (a hard task lowers its mean, an easy one raises it). So one set of tasks is chosen, every method
that ran all of them is ranked over those tasks only, and a method lacking one of them is listed apart
with the tasks it lacks. Only runs with a normalised score (their family has reference points) count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from llmexplore.benchmarks.results.aggregate import Run, normalized
from llmexplore.benchmarks.results.statistics import aggregate_estimates

#: how the tasks are chosen, for the note under the aggregate table
SCOPE_RULE = ("Ranked over the same tasks only: of the sets of tasks that whole groups of methods share, the one "
              "covering the most (method, task) cells (then the most tasks) is chosen; every method that ran all of "
              "them is ranked over those tasks alone, and a method lacking one of them is listed apart.")


@dataclass(frozen=True)
class AggregateScope:
    """The tasks the aggregate ranks over, the methods (row labels) it ranks, and those it leaves out."""

    tasks: tuple[str, ...]
    labels: tuple[str, ...]
    #: label -> why it is not ranked (the ranked tasks it lacks)
    left_out: dict[str, str]
    #: ranked label -> its tasks outside the ranked ones (not counted in the aggregate)
    not_counted_tasks: dict[str, tuple[str, ...]]
    #: every task with a normalised score, ranked or not
    all_tasks: tuple[str, ...] = ()

    def runs(self, runs: list[Run]) -> list[Run]:
        """The runs the aggregate counts: a ranked label's runs on a ranked task."""
        return [r for r in runs if r.label in self.labels and r.task in self.tasks]


def normalised_tasks(runs: list[Run]) -> dict[str, frozenset[str]]:
    """Label -> the tasks where it has at least one run with a normalised score."""
    out: dict[str, set[str]] = {}
    for run in runs:
        value = normalized(run)
        if value is not None and not np.isnan(value):
            out.setdefault(run.label, set()).add(run.task)
    return {label: frozenset(tasks) for label, tasks in out.items()}


def _shared_task_sets(by_label: dict[str, frozenset[str]]) -> set[frozenset[str]]:
    """Every non-empty set of tasks that some group of labels all ran: each label's own tasks and every
    intersection of those."""
    found = {tasks for tasks in by_label.values() if tasks}
    grown = True
    while grown:
        new = {a & b for a in found for b in found if a & b} - found
        found |= new
        grown = bool(new)
    return found


def aggregate_scope(runs: list[Run]) -> AggregateScope:
    """The ranked tasks and methods of these runs (SCOPE_RULE)."""
    return choose_scope(normalised_tasks(runs))


def choose_scope(by_label: dict[str, frozenset[str]]) -> AggregateScope:
    """Choose the ranked tasks (SCOPE_RULE) from each label's tasks, and split the labels into ranked and left out."""
    candidates = _shared_task_sets(by_label)
    if not candidates:
        return AggregateScope((), (), {}, {}, ())

    def covering(tasks: frozenset[str]) -> list[str]:
        return [label for label, own in by_label.items() if tasks <= own]

    chosen = min(candidates, key=lambda t: (-len(covering(t)) * len(t), -len(t), -len(covering(t)), sorted(t)))
    ranked = tuple(sorted(covering(chosen)))
    left_out = {label: "lacks " + ", ".join(sorted(chosen - own)) for label, own in sorted(by_label.items())
                if label not in ranked}
    extra = {label: tuple(sorted(by_label[label] - chosen)) for label in ranked if by_label[label] - chosen}
    every = tuple(sorted(set().union(*by_label.values())))
    return AggregateScope(tuple(sorted(chosen)), ranked, left_out, extra, every)


def aggregate_table(runs: list[Run], reps: int = 2000) -> pd.DataFrame:
    """Per ranked label (``aggregate_scope``): rliable's aggregates of normalised scores (``iqm``, ``median``,
    ``mean``, ``optimality_gap``, each with ``_low`` and ``_high``) over the ranked tasks only, bootstrap
    stratified by task; ``fewest_runs`` is the smallest number of runs in one of its tasks, which decides
    what its intervals may be called."""
    by_label: dict[str, dict[str, list[float]]] = {}
    for run in aggregate_scope(runs).runs(runs):
        value = normalized(run)
        if value is None or np.isnan(value):
            continue
        by_label.setdefault(run.label, {}).setdefault(run.task, []).append(value)
    rows = []
    for label, tasks in sorted(by_label.items()):
        strata = [np.array(v) for v in tasks.values()]
        row: dict[str, Any] = {"label": label, "tasks": len(tasks), "runs": int(sum(a.size for a in strata)),
                               "fewest_runs": int(min(a.size for a in strata))}
        for name, (point, low, high) in aggregate_estimates(strata, reps=reps).items():
            row.update({name: point, f"{name}_low": low, f"{name}_high": high})
        rows.append(row)
    return pd.DataFrame(rows)
