"""Leaderboard files: Markdown, CSV, LaTeX, plots and a static HTML page."""

from __future__ import annotations

import html
import json
import math
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from llmexplore.atomic import atomic_write_text
from llmexplore.benchmarks.results import references
from llmexplore.benchmarks.results.aggregate import (
    Collection,
    achievement_table,
    aggregate_table,
    collect,
    extra_column_names,
    normalization_notes,
    per_task_table,
    scores_table,
)
from llmexplore.benchmarks.results.comparisons import fewest_runs_per_task, improvement_table, profile_curves
from llmexplore.benchmarks.results.curve_plots import plot_achievements, plot_curves, plot_profiles
from llmexplore.benchmarks.results.display import method_display_name, task_display_name
from llmexplore.benchmarks.results.latex import MAX_LATEX_COLUMNS, Better, latex_escape, latex_tables  # noqa: F401
from llmexplore.benchmarks.results.statistics import FEW_RUNS, interval_is_ci, interval_meaning, interval_name
from llmexplore.errors import DataError

#: below this many seeds (runs in a task) a cell is marked and its interval explained (Agarwal et al. 2021)
FEW_SEEDS = FEW_RUNS
FEW_MARK = "†"
#: above every published table: its ± is the spread its source reports, named in the column
PUBLISHED_NOTE = ("Published results (not run here). Their ± is the spread the source reports, named in the column: "
                  "s.d. is a standard deviation over seeds, not a standard error.")


class FewSeedsWarning(UserWarning):
    """A leaderboard cell whose uncertainty cannot be estimated from its seeds."""


class NotCountedWarning(UserWarning):
    """Complete records the leaderboard refused (admission.py) or found twice."""


def _num(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}" if isinstance(x, (int, float)) else str(x)


def _pm(mean: float, se: float, digits: int = 2) -> str:
    return _num(mean, digits) if math.isnan(se) else f"{_num(mean, digits)} ± {_num(se, digits)}"


def _ci(point: float, low: float, high: float, digits: int = 2, fewest_runs: int | None = None) -> str:
    """'point [low, high]', marked when the interval rests on fewer than FEW_RUNS runs in a task."""
    if isinstance(low, float) and math.isnan(low):
        return f"{_num(point, digits)} (no interval)"
    mark = FEW_MARK if fewest_runs is not None and not interval_is_ci(fewest_runs) else ""
    return f"{_num(point, digits)} [{_num(low, digits)}, {_num(high, digits)}]{mark}"


def _seeds(n: int) -> str:
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


def seed_notes(counts: list[int], reps: int = 2000) -> list[str]:
    """The interval note of a per-task table (``counts``: its seeds per row)."""
    return interval_notes(counts, reps)


def interval_header(name: str, fewest_runs: list[int]) -> str:
    """'<name> [95% CI]' only when every cell may be called so, else '<name> [interval]'."""
    return f"{name} [{interval_name(fewest_runs)}]"


def task_display(task_rows: pd.DataFrame) -> pd.DataFrame:
    """The human-readable table of one task's rows."""
    metric = task_rows["metric"].iloc[0]
    out = pd.DataFrame({
        "method": task_rows["label"],
        "seeds": [_seeds(n) for n in task_rows["seeds"]],
        "budget": [_num(b, 0) if isinstance(b, (int, float)) else b for b in task_rows["budget"]],
        f"{metric} (mean ± s.e.)": [_pm(m, s) for m, s in zip(task_rows["mean"], task_rows["se"])],
        interval_header(f"{metric} IQM", list(task_rows["seeds"])):
            [_ci(p, lo, hi, fewest_runs=n) for p, lo, hi, n in
             zip(task_rows["iqm"], task_rows["iqm_low"], task_rows["iqm_high"], task_rows["seeds"])],
        "return (mean ± s.e.)": [_pm(m, s) for m, s in zip(task_rows["return_mean"], task_rows["return_se"])],
        "intrinsic return (mean ± s.e.)": [_pm(m, s) for m, s in
                                           zip(task_rows["intrinsic_return_mean"], task_rows["intrinsic_return_se"])],
    })
    for column in task_rows.columns:
        if column in extra_column_names() and column != metric and task_rows[column].notna().any():
            out[column.replace("_", " ")] = [_num(v) for v in task_rows[column]]
    return out.reset_index(drop=True)


def reference_display(task: str) -> tuple[pd.DataFrame, str] | None:
    """The published results for a task as a table, with its source line; None when none are known."""
    ref = references.for_task(task)
    if not ref:
        return None
    df = pd.DataFrame({
        "method (published)": [r["label"] for r in ref["rows"]],
        "budget": [_num(ref["budget"], 0)] * len(ref["rows"]),
        f"{ref['metric']} (mean ± {ref['spread']})": [_pm(r["mean"], r["spread"], 1) for r in ref["rows"]],
    })
    return df, ref["source"]


def improvement_display(table: pd.DataFrame) -> pd.DataFrame:
    """P(X > Y) per pair of labels; 0.5 means neither tends to beat the other."""
    return pd.DataFrame({
        "X": table["x"], "Y": table["y"],
        "runs X / Y": [f"{a} / {b}" for a, b in zip(table["x_runs"], table["y_runs"])],
        interval_header("P(X > Y)", list(table["fewest_runs"])):
            [_ci(p, lo, hi, fewest_runs=n) for p, lo, hi, n in
             zip(table["p_improvement"], table["low"], table["high"], table["fewest_runs"])],
    })


IMPROVEMENT_NOTE = ("P(X > Y): the chance that a run of X scores above a run of Y on the same task (all pairs of "
                    "runs, ties count half; the Mann-Whitney U statistic over the number of pairs), averaged over "
                    "tasks; 0.5 means no tendency either way. Its interval resamples the runs of X and of Y "
                    "independently within each task (Agarwal et al. 2021).")


def build_leaderboard(runs_dir: str | Path, out_dir: str | Path, title: str | None = None,
                      reps: int = 2000) -> dict[str, Path]:
    """Write every leaderboard file for the runs under ``runs_dir``; return their paths."""
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    found = collect(runs_dir)
    if not found.runs and not found.excluded:
        raise DataError(f"no run records under {runs_dir}", hint="run a grid or `llmexplore run` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    title = title or runs_dir.name
    per_task = per_task_table(found.runs, reps=reps)
    aggregate = aggregate_table(found.runs, reps=reps)
    achievements = achievement_table(found.runs)
    tasks = sorted(per_task["task"].unique()) if not per_task.empty else []
    board = Board(title, found, per_task, aggregate, achievements, tasks, reps=reps,
                  improvements={task: improvement_table(found.runs, task, reps=reps) for task in tasks})
    if not aggregate.empty and aggregate["tasks"].max() > 1:
        board.improvements[None] = improvement_table(found.runs, None, reps=reps)
    _warn_single_seeds(per_task)
    _warn_not_counted(found)
    files: dict[str, Path] = {}

    for task in tasks:
        metric = per_task[per_task["task"] == task]["metric"].iloc[0]
        safe = task.replace(":", "-")
        paths = [plot_curves(found.runs, task, metric, out_dir / f"curves_{safe}.png"),
                 plot_profiles(profile_curves(found.runs, task, reps=reps), f"{task}: performance profile "
                               f"({band_name(fewest_runs_per_task(found.runs, task))})", metric,
                               out_dir / f"profile_{safe}.png"),
                 plot_achievements(achievements, task, out_dir / f"achievements_{safe}.png")]
        board.images[task] = [p for p in paths if p is not None]
    if None in board.improvements:
        path = plot_profiles(profile_curves(found.runs, None, reps=reps), "All tasks: performance profile of "
                             f"normalised scores ({band_name(fewest_runs_per_task(found.runs))})", "normalised score",
                             out_dir / "profile_all.png")
        board.images[None] = [path] if path else []

    scores = scores_table(found.runs)
    files["scores_csv"] = out_dir / "scores.csv"
    atomic_write_text(files["scores_csv"], scores.to_csv(index=False))
    files["scores_json"] = out_dir / "scores.json"
    atomic_write_text(files["scores_json"], _scores_json(scores))
    files["markdown"] = out_dir / "leaderboard.md"
    atomic_write_text(files["markdown"], _markdown(board))
    files["csv"] = out_dir / "leaderboard.csv"
    atomic_write_text(files["csv"], _csv(per_task, tasks, found.excluded))
    files["latex"] = out_dir / "leaderboard.tex"
    atomic_write_text(files["latex"], latex_document_body(board))
    files["html"] = out_dir / "index.html"
    atomic_write_text(files["html"], _html(board))
    return files


@dataclass
class Board:
    """Everything the leaderboard files show."""

    title: str
    found: Collection
    per_task: pd.DataFrame
    aggregate: pd.DataFrame
    achievements: pd.DataFrame
    tasks: list[str]
    improvements: dict[str | None, pd.DataFrame] = field(default_factory=dict)
    reps: int = 2000
    images: dict[str | None, list[Path]] = field(default_factory=dict)

    @property
    def has_aggregate(self) -> bool:
        """Whether any label ran on more than one task, so an aggregate table means something."""
        return not self.aggregate.empty and self.aggregate["tasks"].max() > 1


# -- the page's parts, the same for every output format -----------------------------------------------
@dataclass(frozen=True)
class Table:
    """A table of runs made here; LaTeX folds the notes that follow it into its caption."""

    df: pd.DataFrame
    caption: str
    label: str  # LaTeX label
    show_index: bool = False
    #: LaTeX's short caption, with display names (empty: ``caption``)
    latex_caption: str = ""
    #: column -> whether its best value is the highest or the lowest (bold in LaTeX)
    best: tuple[tuple[str, Better], ...] = ()


@dataclass(frozen=True)
class Note:
    text: str


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


def _warn_single_seeds(per_task: pd.DataFrame) -> None:
    single = per_task[per_task["seeds"] < 2] if not per_task.empty else per_task
    if len(single):
        cells = ", ".join(f"{r.label} on {r.task}" for r in single.itertuples())
        warnings.warn(f"one seed only for {cells}: no confidence interval can be given; run more seeds "
                      f"(at least {FEW_SEEDS} for a meaningful interval)", FewSeedsWarning, stacklevel=3)


def _warn_not_counted(found: Collection) -> None:
    refused = [row for row in found.excluded if row["status"] in ("refused", "duplicate")]
    if refused:
        first = refused[0]
        warnings.warn(f"{len(refused)} complete record(s) not counted, e.g. {first['path']}: {first['why']} "
                      f"(all of them, with the reason: '{EXCLUDED_HEADING}' in leaderboard.md)",
                      NotCountedWarning, stacklevel=3)


def _scores_json(scores: pd.DataFrame) -> str:
    """The per-run scores as a list of objects; missing values are null."""
    rows = json.loads(scores.to_json(orient="records"))
    return json.dumps({"schema": "llmexplore.scores", "schema_version": 1, "runs": rows}, indent=1) + "\n"


def _header(board: Board) -> list[str]:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    found = board.found
    return [f"# Leaderboard: {board.title}", "",
            f"{_counted(found)}; {stamp}.",
            "Metric columns: mean ± standard error over seeds, and the interquartile mean with a "
            f"stratified-bootstrap interval, a 95% confidence interval only where a cell has at least {FEW_SEEDS} "
            f"runs per task; cells with fewer are marked {FEW_MARK} and the note under the table says what "
            "their interval is. Published results appear in separate tables, never mixed with runs made here. "
            "Per-run values: scores.csv and scores.json.", ""]


def _counted(found: Collection) -> str:
    return (f"{len(found.runs)} runs counted ({len(found.excluded)} not counted: incomplete or refused, "
            "listed with the reason at the end)")


#: the heading and the columns of the list of runs not counted, in every output
EXCLUDED_HEADING = "Runs not counted"
EXCLUDED_COLUMNS = ["path", "status", "cell", "why"]


def excluded_display(excluded: list[dict[str, Any]]) -> pd.DataFrame:
    """The run records left out of the leaderboard, with why, as a table."""
    return pd.DataFrame([{c: str(row.get(c, "")) for c in EXCLUDED_COLUMNS} for row in excluded],
                        columns=EXCLUDED_COLUMNS)


def _aggregate_notes(aggregate: pd.DataFrame, reps: int) -> list[str]:
    return [AGGREGATE_NOTE, *interval_notes(list(aggregate["fewest_runs"]), reps),
            "Per-task normalisation: " + "; ".join(normalization_notes())]


def band_name(fewest_runs: int) -> str:
    """A profile plot's band: a 95% band only with enough runs in every task."""
    if fewest_runs < 2:
        return "no band: one run in a task"
    if interval_is_ci(fewest_runs):
        return "95% stratified-bootstrap band"
    return f"bootstrap band of {fewest_runs} runs in a task: not a 95% band"


#: rliable's aggregates in the order they are shown, with their column names
AGGREGATE_COLUMNS = {"iqm": "IQM", "median": "median", "mean": "mean", "optimality_gap": "optimality gap"}
AGGREGATE_NOTE = ("Normalised scores: IQM is the mean of the middle 50% of all runs' scores; median and mean are "
                  "over the tasks' mean scores; the optimality gap is the mean shortfall below 1, mean of "
                  "max(1 - x, 0), lower is better (Agarwal et al. 2021).")


def _aggregate_display(aggregate: pd.DataFrame) -> pd.DataFrame:
    fewest = list(aggregate["fewest_runs"])
    out = pd.DataFrame({
        "method": aggregate["label"],
        "runs (tasks)": [f"{r} ({t}){FEW_MARK if not interval_is_ci(n) else ''}"
                         for r, t, n in zip(aggregate["runs"], aggregate["tasks"], fewest)],
    })
    for key, name in AGGREGATE_COLUMNS.items():
        out[interval_header(name, fewest)] = [
            _ci(p, lo, hi, 3, fewest_runs=n)
            for p, lo, hi, n in zip(aggregate[key], aggregate[f"{key}_low"], aggregate[f"{key}_high"], fewest)]
    return out


def _achievements_display(achievements: pd.DataFrame, task: str) -> pd.DataFrame:
    rows = achievements[achievements["task"] == task].drop(columns=["task"]).set_index("label")
    seeds = rows.pop("seeds").astype(int)
    shown = rows.T.map(lambda v: _num(v, 1) if isinstance(v, float) else str(v))
    return pd.concat([pd.DataFrame([[_seeds(n) for n in seeds]], index=["seeds"], columns=shown.columns), shown])


def _sections(board: Board) -> list[Section]:
    """The leaderboard's content in order, independent of the output format."""
    out: list[Section] = []
    if board.has_aggregate:
        caption = "Normalised scores across tasks."
        table = _aggregate_display(board.aggregate)
        best = tuple((c, "min" if c.startswith("optimality gap") else "max") for c in table.columns[2:])
        parts: list[Part] = [Table(table, caption, "tab:agg", best=best)]
        parts += [Note(n) for n in _aggregate_notes(board.aggregate, board.reps)]
        parts += _improvement_parts(board.improvements.get(None), "all tasks", "tab:pi-all", board.reps)
        parts += [Image(p) for p in board.images.get(None, [])]
        out.append(Section("Aggregate across tasks", parts))
    for task in board.tasks:
        rows = board.per_task[board.per_task["task"] == task]
        safe = _label_key(task)
        metric = rows["metric"].iloc[0]
        table = task_display(rows)
        best = tuple((c, "max") for c in table.columns if c.startswith(f"{metric} ") or c.startswith("return "))
        parts = [Table(table, f"{task}: {metric}, mean ± s.e. over seeds and IQM.", f"tab:{safe}",
                       latex_caption=f"{task_display_name(task)}: {metric.replace('_', ' ')}.", best=best)]
        parts += [Note(n) for n in seed_notes(list(rows["seeds"]), board.reps)]
        parts += _improvement_parts(board.improvements.get(task), task, f"tab:pi-{safe}", board.reps)
        ref = reference_display(task)
        if ref:
            parts.append(Reference(ref[0], ref[1], f"tab:pub-{safe}"))
        if not board.achievements.empty and task in set(board.achievements["task"]):
            parts.append(Table(_achievements_display(board.achievements, task),
                               f"{task}: achievement success rates (% of training episodes within the budget).",
                               f"tab:ach-{safe}", show_index=True,
                               latex_caption=f"{task_display_name(task)}: achievement success rates (%)."))
        parts += [Image(p) for p in board.images.get(task, [])]
        out.append(Section(task, parts))
    return out


def _improvement_parts(table: pd.DataFrame | None, where: str, label: str, reps: int) -> list[Part]:
    if table is None or table.empty:
        return []
    shown = where if where == "all tasks" else task_display_name(where)
    return [Table(improvement_display(table), f"Probability of improvement, {where}.", label,
                  latex_caption=f"Probability of improvement, {shown}."),
            Note(IMPROVEMENT_NOTE), *[Note(n) for n in interval_notes(list(table["fewest_runs"]), reps)]]


def _label_key(task: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in task)


def _markdown(board: Board) -> str:
    lines = _header(board)
    for section in _sections(board):
        lines += [f"## {section.heading}", ""]
        for part in section.parts:
            match part:
                case Table():
                    lines += [part.caption, "", part.df.to_markdown(index=part.show_index), ""]
                case Note():
                    lines += [f"_{part.text}_", ""]
                case Reference():
                    lines += [PUBLISHED_NOTE, "", part.df.to_markdown(index=False), "",
                              f"_Source: {part.source}._", ""]
                case Image():
                    lines += [f"![{part.path.stem}]({part.path.name})", ""]
    if board.found.excluded:
        lines += [f"## {EXCLUDED_HEADING}", "", excluded_display(board.found.excluded).to_markdown(index=False), ""]
    return "\n".join(lines)


def _csv(per_task: pd.DataFrame, tasks: list[str], excluded: list[dict[str, Any]]) -> str:
    runs = per_task.copy()
    runs.insert(0, "kind", "run")
    runs["source"] = ""
    refs = []
    for task in tasks:
        ref = references.for_task(task)
        for row in (ref or {}).get("rows", []):
            refs.append({"kind": "published", "task": task, "label": row["label"], "metric": ref["metric"],
                         "budget": ref["budget"], "mean": row["mean"], "se": float("nan"), "spread": row["spread"],
                         "spread_kind": ref["spread"],
                         "source": ref["source"]})
    tables = [runs, pd.DataFrame(refs)]
    if excluded:
        skipped = excluded_display(excluded).rename(columns={"path": "run_dir"})
        skipped.insert(0, "kind", "not counted")
        tables.append(skipped)
    return pd.concat(tables, ignore_index=True).to_csv(index=False)


#: the columns of run tables whose cells name a row label (a method), shown by display name in LaTeX
LABEL_COLUMNS = ("method", "X", "Y")


def _display_names(board: Board) -> dict[str, str]:
    """Row label -> its display name (the method's, when the label is the method's own name)."""
    methods = dict(zip(board.per_task["label"], board.per_task["method"])) if not board.per_task.empty else {}
    return {label: method_display_name(label, method) for label, method in methods.items()}


def _with_display_names(df: pd.DataFrame, names: dict[str, str], show_index: bool) -> pd.DataFrame:
    df = df.reset_index().rename(columns={"index": ""}) if show_index else df.copy()
    for column in LABEL_COLUMNS:
        if column in df.columns:
            df[column] = [names.get(v, v) for v in df[column]]
    return df.rename(columns={c: names[c] for c in df.columns if c in names})


def latex_document_body(board: Board) -> str:
    """Every table of the leaderboard; needs \\usepackage{booktabs} and \\usepackage{graphicx}."""
    names = _display_names(board)
    parts = ["% Generated by `llmexplore leaderboard`; needs \\usepackage{booktabs} and \\usepackage{graphicx}.",
             "% A table wider than \\linewidth is scaled to it; in a two-column layout use table* for the wide ones.",
             ""]
    for section in _sections(board):
        pending: Table | None = None  # the last table, held until the notes that follow it
        notes: list[str] = []
        for part in [*section.parts, None]:
            if isinstance(part, Note) and pending:
                notes.append(part.text)
                continue
            if pending:
                parts.extend(latex_tables(_with_display_names(pending.df, names, pending.show_index),
                                          pending.latex_caption or pending.caption, pending.label, notes,
                                          dict(pending.best)))
                pending, notes = None, []
            if isinstance(part, Table):
                pending = part
            elif isinstance(part, Reference):
                parts.extend(latex_tables(part.df, "Published results (not run here).", part.label,
                                          [f"Source: {part.source}."]))
    if board.found.excluded:
        parts.extend(latex_tables(excluded_display(board.found.excluded), f"{EXCLUDED_HEADING}.", "tab:not-counted",
                                  ["Incomplete or refused records, with the reason."]))
    return "\n".join(parts)


def _html(board: Board) -> str:
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(board.title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}"
             "td:first-child{text-align:left}.ref{color:#555}.note{color:#444;font-size:90%}"
             "img{max-width:100%}</style></head><body>",
             f"<h1>Leaderboard: {esc(board.title)}</h1>",
             f"<p>{esc(_counted(board.found))}. Mean ± s.e. over "
             "seeds; IQM with a stratified-bootstrap interval, a 95% confidence interval only with at least "
             f"{FEW_SEEDS} runs per task; cells with fewer are marked {FEW_MARK} and the note under the table "
             "says what the interval is. Published results are in separate, grey tables. Per-run values: "
             "<a href='scores.csv'>scores.csv</a>, <a href='scores.json'>scores.json</a>.</p>"]
    for section in _sections(board):
        parts.append(f"<h2>{esc(section.heading)}</h2>")
        for part in section.parts:
            match part:
                case Table():
                    parts += [f"<p>{esc(part.caption)}</p>", part.df.to_html(index=part.show_index)]
                case Note():
                    parts.append(f"<p class='note'><em>{esc(part.text)}</em></p>")
                case Reference():
                    parts += [f"<div class='ref'><p>{esc(PUBLISHED_NOTE)}</p>", part.df.to_html(index=False),
                              f"<p><em>Source: {esc(part.source)}</em></p></div>"]
                case Image():
                    parts.append(f"<p><img src='{esc(part.path.name)}' alt='{esc(part.path.stem)}'></p>")
    if board.found.excluded:
        parts += [f"<h2>{EXCLUDED_HEADING}</h2>", excluded_display(board.found.excluded).to_html(index=False)]
    parts.append("</body></html>")
    return "\n".join(parts)
