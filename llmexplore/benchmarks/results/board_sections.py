"""The leaderboard's content in order, the same for every output format: each table with its caption, LaTeX
label (table_labels.py), bold cells (separation.py) and the notes that say what it shows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from llmexplore.benchmarks.results import references
from llmexplore.benchmarks.results.aggregate import Run, extra_column_names, normalization_notes
from llmexplore.benchmarks.results.board import Board, Image, Note, Part, Reference, Section, Table
from llmexplore.benchmarks.results.cells import (
    interval_header,
    interval_notes,
    num,
    plus_minus,
    seeds_cell,
    with_interval,
)
from llmexplore.benchmarks.results.cross_task import SCOPE_RULE
from llmexplore.benchmarks.results.display import task_display_name
from llmexplore.benchmarks.results.inert import INERT_RULE
from llmexplore.benchmarks.results.separation import SEPARATION_RULE, Better, separated_best
from llmexplore.benchmarks.results.statistics import interval_is_ci, mean_and_se
from llmexplore.benchmarks.results.table_labels import table_label
from llmexplore.envs.registry import find_family, get_task
from llmexplore.errors import ConfigError

#: above every published table: its ± is the spread its source reports, named in the column
PUBLISHED_NOTE = ("Published results (not run here). Their ± is the spread the source reports, named in the column: "
                  "s.d. is a standard deviation over seeds, not a standard error.")
IMPROVEMENT_NOTE = ("P(X > Y): the chance that a run of X scores above a run of Y on the same task (all pairs of "
                    "runs, ties count half; the Mann-Whitney U statistic over the number of pairs), averaged over "
                    "tasks; 0.5 means no tendency either way. Its interval resamples the runs of X and of Y "
                    "independently within each task (Agarwal et al. 2021).")
#: rliable's aggregates in the order they are shown, with their column names
AGGREGATE_COLUMNS = {"iqm": "IQM", "median": "median", "mean": "mean", "optimality_gap": "optimality gap"}
AGGREGATE_NOTE = ("Normalised scores: IQM is the mean of the middle 50% of all runs' scores; median and mean are "
                  "over the tasks' mean scores; the optimality gap is the mean shortfall below 1, mean of "
                  "max(1 - x, 0), lower is better (Agarwal et al. 2021).")
CURVES_NOTE = ("Curves: each point is the mean over the episodes that ended in its bin of env steps, so the last "
               "point shows only the latest episodes, while a table counts the episodes its note names.")
RETURN_NOTE = "return: the task's reward summed over an episode, unscaled."
INTRINSIC_NOTE = "intrinsic return: the method's reward summed over an episode, before c_int."
REWARD_FREE_NOTE = "A reward-free task gives the agent no reward, so the table has no return column."
#: the heading and the columns of the list of runs not counted, in every output
EXCLUDED_HEADING = "Runs not counted"
EXCLUDED_COLUMNS = ["path", "status", "cell", "why"]
INERT_HEADING = "Inert runs (not ranked)"
#: per-task columns shown in every table, so a family's extra column of the same name is not repeated
SHOWN_VALUES = ("return", "intrinsic_return")


def is_reward_free(task: str) -> bool:
    """Whether the task gives the agent no reward (its return column would be zero by design)."""
    try:
        return get_task(task).reward_free
    except ConfigError:  # a record of a task this installation lacks
        return False


def task_display(task_rows: pd.DataFrame) -> pd.DataFrame:
    """The human-readable table of one task's rows; a reward-free task has no return column."""
    metric = task_rows["metric"].iloc[0]
    out = pd.DataFrame({
        "method": task_rows["label"],
        "seeds": [seeds_cell(n) for n in task_rows["seeds"]],
        "budget": [num(b, 0) if isinstance(b, (int, float)) else b for b in task_rows["budget"]],
        f"{metric} (mean ± s.e.)": [plus_minus(m, s) for m, s in zip(task_rows["mean"], task_rows["se"])],
        interval_header(f"{metric} IQM", list(task_rows["seeds"])):
            [with_interval(p, lo, hi, fewest_runs=n) for p, lo, hi, n in
             zip(task_rows["iqm"], task_rows["iqm_low"], task_rows["iqm_high"], task_rows["seeds"])],
        "return (mean ± s.e.)": [plus_minus(m, s) for m, s in zip(task_rows["return_mean"], task_rows["return_se"])],
        "intrinsic return (mean ± s.e.)": [plus_minus(m, s) for m, s in
                                           zip(task_rows["intrinsic_return_mean"], task_rows["intrinsic_return_se"])],
    })
    if is_reward_free(str(task_rows["task"].iloc[0])):
        out = out.drop(columns=["return (mean ± s.e.)"])
    for column in task_rows.columns:
        if (column in extra_column_names() and column != metric and column not in SHOWN_VALUES
                and task_rows[column].notna().any()):
            out[column.replace("_", " ")] = [num(v) for v in task_rows[column]]
    return out.reset_index(drop=True)


def reference_display(task: str) -> tuple[pd.DataFrame, str] | None:
    """The published results for a task as a table, with its source line; None when none are known."""
    ref = references.for_task(task)
    if not ref:
        return None
    df = pd.DataFrame({
        "method (published)": [r["label"] for r in ref["rows"]],
        "budget": [num(ref["budget"], 0)] * len(ref["rows"]),
        f"{ref['metric']} (mean ± {ref['spread']})": [plus_minus(r["mean"], r["spread"], 1) for r in ref["rows"]],
    })
    return df, ref["source"]


def improvement_display(table: pd.DataFrame) -> pd.DataFrame:
    """P(X > Y) per pair of labels; 0.5 means neither tends to beat the other."""
    return pd.DataFrame({
        "X": table["x"], "Y": table["y"],
        "runs X / Y": [f"{a} / {b}" for a, b in zip(table["x_runs"], table["y_runs"])],
        interval_header("P(X > Y)", list(table["fewest_runs"])):
            [with_interval(p, lo, hi, fewest_runs=n) for p, lo, hi, n in
             zip(table["p_improvement"], table["low"], table["high"], table["fewest_runs"])],
    })


def aggregate_display(aggregate: pd.DataFrame) -> pd.DataFrame:
    """The aggregate table: runs (tasks) and rliable's four aggregates with their intervals."""
    fewest = list(aggregate["fewest_runs"])
    out = pd.DataFrame({
        "method": aggregate["label"],
        "runs (tasks)": [f"{r} ({t}){'' if interval_is_ci(n) else '†'}"
                         for r, t, n in zip(aggregate["runs"], aggregate["tasks"], fewest)],
    })
    for key, name in AGGREGATE_COLUMNS.items():
        out[interval_header(name, fewest)] = [
            with_interval(p, lo, hi, 3, fewest_runs=n)
            for p, lo, hi, n in zip(aggregate[key], aggregate[f"{key}_low"], aggregate[f"{key}_high"], fewest)]
    return out


def achievements_display(achievements: pd.DataFrame, task: str) -> pd.DataFrame:
    """One column per label, one row per achievement, seeds on top."""
    rows = achievements[achievements["task"] == task].drop(columns=["task"]).set_index("label")
    seeds = rows.pop("seeds").astype(int)
    shown = rows.T.map(lambda v: num(v, 1) if isinstance(v, float) else str(v))
    return pd.concat([pd.DataFrame([[seeds_cell(n) for n in seeds]], index=["seeds"], columns=shown.columns), shown])


def excluded_display(excluded: list[dict[str, Any]]) -> pd.DataFrame:
    """The run records left out of the leaderboard, with why, as a table."""
    return pd.DataFrame([{c: str(row.get(c, "")) for c in EXCLUDED_COLUMNS} for row in excluded],
                        columns=EXCLUDED_COLUMNS)


def inert_rows(inert: list[tuple[Run, str]]) -> pd.DataFrame:
    """One row per (task, label) of inert runs: ``seeds``, the ``metric``'s ``mean`` and ``se``, and ``why``."""
    groups: dict[tuple[str, str], list[tuple[Run, str]]] = {}
    for run, why in inert:
        groups.setdefault((run.task, run.label), []).append((run, why))
    rows = []
    for (task, label), group in sorted(groups.items()):
        metric = group[0][0].record.metric
        mean, se = mean_and_se([run.value(metric) for run, _ in group])
        rows.append({"task": task, "label": label, "seeds": len(group), "metric": metric, "mean": mean, "se": se,
                     "why": "; ".join(dict.fromkeys(why for _, why in group))})
    return pd.DataFrame(rows, columns=["task", "label", "seeds", "metric", "mean", "se", "why"])


def inert_display(inert: list[tuple[Run, str]]) -> pd.DataFrame:
    """The table of inert runs: method, task, seeds, the metric's mean ± s.e., and why they are inert."""
    rows = inert_rows(inert)
    return pd.DataFrame({"method": rows["label"], "task": rows["task"], "seeds": [seeds_cell(n) for n in rows["seeds"]],
                         "metric (mean ± s.e.)": [f"{m} {plus_minus(a, s)}" for m, a, s in
                                                  zip(rows["metric"], rows["mean"], rows["se"])],
                         "why": rows["why"]})


def _bold(table: pd.DataFrame, labels: list[str], columns: dict[str, tuple[list[float], Better]],
          improvements: pd.DataFrame | None) -> tuple[tuple[str, int], ...]:
    """The cells to bold: per column (its points and which way is better) the separated best, if any."""
    cells = []
    for column, (points, better) in columns.items():
        row = separated_best(points, labels, better, improvements)
        if row is not None and column in table.columns:
            cells.append((column, row))
    return tuple(cells)


def board_interval_note(board: Board) -> str:
    """One interval note for the whole page: the seed counts of every table with intervals."""
    counts = list(board.per_task["seeds"]) if not board.per_task.empty else []
    counts += list(board.aggregate["fewest_runs"]) if not board.aggregate.empty else []
    counts += [n for table in board.improvements.values() for n in table.get("fewest_runs", [])]
    return interval_notes(counts, board.reps)[0]


def sections(board: Board) -> list[Section]:
    """The leaderboard's content in order, independent of the output format."""
    shared = board_interval_note(board)
    out = [_aggregate_section(board, shared)] if board.has_aggregate else []
    out += [_task_section(board, task, shared) for task in board.tasks]
    if board.inert:
        out.append(Section(INERT_HEADING, [Table(inert_display(board.inert), "Runs whose method contributed nothing.",
                                                 table_label("inert")), Note(INERT_RULE)]))
    return out


def _aggregate_section(board: Board, shared_intervals: str) -> Section:
    aggregate = board.aggregate
    table = aggregate_display(aggregate)
    points = {column: ([float(v) for v in aggregate[key]], "min" if key == "optimality_gap" else "max")
              for key, column in zip(AGGREGATE_COLUMNS, table.columns[2:])}
    bold = _bold(table, list(aggregate["label"]), points, board.improvements.get(None))
    parts: list[Part] = [Table(table, "Normalised scores across tasks.", table_label("aggregate"), bold=bold),
                         Note(AGGREGATE_NOTE), Note(_scope_note(board))]
    parts += [Note(n, once=shared_intervals) for n in interval_notes(list(aggregate["fewest_runs"]), board.reps)]
    families = {task.split(":", 1)[0] for task in board.scope.tasks}
    parts += [Note("Per-task normalisation: " + "; ".join(normalization_notes(families)) + "."),
              Note(SEPARATION_RULE, once=SEPARATION_RULE)]
    parts += _improvement_parts(board, None, shared_intervals)
    parts += [Image(p) for p in board.images.get(None, [])]
    return Section("Aggregate across tasks", parts)


def _scope_note(board: Board) -> str:
    scope = board.scope
    text = f"Ranked over {len(scope.tasks)} task(s): {', '.join(scope.tasks)}."
    if not scope.left_out and not scope.not_counted_tasks:
        return text + " Every method ran each of them."
    text += f" {SCOPE_RULE}"
    if scope.not_counted_tasks:
        text += " Not counted here: " + "; ".join(f"{label} on {', '.join(tasks)}"
                                                 for label, tasks in scope.not_counted_tasks.items()) + "."
    if scope.left_out:
        text += " Not ranked: " + "; ".join(f"{label} ({why})" for label, why in scope.left_out.items()) + "."
    return text


def _task_section(board: Board, task: str, shared_intervals: str) -> Section:
    rows = board.per_task[board.per_task["task"] == task]
    metric = rows["metric"].iloc[0]
    table = task_display(rows)
    labels = list(rows["label"])
    points = {table.columns[3]: ([float(v) for v in rows["mean"]], "max"),
              table.columns[4]: ([float(v) for v in rows["iqm"]], "max")}
    bold = _bold(table, labels, points, board.improvements.get(task))
    parts: list[Part] = [Table(table, f"{task}: {metric}, mean ± s.e. over seeds and IQM.", table_label("task", task),
                               latex_caption=f"{task_display_name(task)}: {metric.replace('_', ' ')}.", bold=bold),
                         Note(_columns_note(board, task, list(table.columns), metric))]
    parts += [Note(n, once=shared_intervals) for n in interval_notes(list(rows["seeds"]), board.reps)]
    parts += [Note(SEPARATION_RULE, once=SEPARATION_RULE)]
    inert = sorted({run.label for run, _ in board.inert if run.task == task})
    if inert:
        parts.append(Note(f"Not ranked, inert: {', '.join(inert)} (see '{INERT_HEADING}')."))
    parts += _improvement_parts(board, task, shared_intervals)
    ref = reference_display(task)
    if ref:
        parts.append(Reference(ref[0], ref[1], table_label("published", task)))
    if not board.achievements.empty and task in set(board.achievements["task"]):
        parts.append(Table(achievements_display(board.achievements, task),
                           f"{task}: achievement success rates (% of training episodes within the budget).",
                           table_label("achievements", task), show_index=True,
                           latex_caption=f"{task_display_name(task)}: achievement success rates (%)."))
    images = board.images.get(task, [])
    if any(p.stem.startswith("curves_") for p in images):
        parts.append(Note(CURVES_NOTE, once=CURVES_NOTE, latex=False))
    parts += [Image(p) for p in images]
    return Section(task, parts)


def _columns_note(board: Board, task: str, columns: list[str], metric: str) -> str:
    """What the task table's columns count: the episodes (the records' own words), the returns, a
    reward-free task's missing return, and the family's extra columns shown."""
    windows = sorted({r.record.final_window for r in board.runs if r.task == task and r.record.final_window})
    text = f"{metric} and the returns: {' / '.join(windows)}. " if windows else ""
    text += f"{REWARD_FREE_NOTE} {INTRINSIC_NOTE}" if is_reward_free(task) else f"{RETURN_NOTE} {INTRINSIC_NOTE}"
    family = find_family(task.split(":", 1)[0])
    for column, meaning in (family.column_notes.items() if family else ()):
        if column.replace("_", " ") in columns:
            text += f" {column.replace('_', ' ')}: {meaning}."
    return text


def _improvement_parts(board: Board, task: str | None, shared_intervals: str) -> list[Part]:
    table = board.improvements.get(task)
    if table is None or table.empty:
        return []
    where = task or "all tasks"
    shown = task_display_name(task) if task else where
    label = table_label("improvement", task) if task else table_label("aggregate improvement")
    return [Table(improvement_display(table), f"Probability of improvement, {where}.", label,
                  latex_caption=f"Probability of improvement, {shown}."),
            Note(IMPROVEMENT_NOTE, once=IMPROVEMENT_NOTE),
            *[Note(n, once=shared_intervals) for n in interval_notes(list(table["fewest_runs"]), board.reps)]]
