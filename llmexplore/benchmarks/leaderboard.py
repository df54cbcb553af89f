"""Leaderboard files: Markdown, CSV, LaTeX, plots and a static HTML page."""

from __future__ import annotations

import html
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from llmexplore.atomic import atomic_write_text
from llmexplore.benchmarks import references
from llmexplore.benchmarks.aggregate import (
    EXTRA_COLUMNS,
    NORMALIZATION,
    Collection,
    aggregate_table,
    collect,
    crafter_achievement_table,
    per_task_table,
)
from llmexplore.benchmarks.plots import plot_achievements, plot_curves
from llmexplore.errors import DataError


EXTRA_NAMES = {name for names in EXTRA_COLUMNS.values() for name in names}


def _num(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}" if isinstance(x, (int, float)) else str(x)


def _pm(mean: float, se: float, digits: int = 2) -> str:
    return _num(mean, digits) if math.isnan(se) else f"{_num(mean, digits)} ± {_num(se, digits)}"


def _ci(point: float, low: float, high: float, digits: int = 2) -> str:
    return f"{_num(point, digits)} [{_num(low, digits)}, {_num(high, digits)}]"


def task_display(task_rows: pd.DataFrame) -> pd.DataFrame:
    """The human-readable table of one task's rows."""
    metric = task_rows["metric"].iloc[0]
    out = pd.DataFrame({
        "method": task_rows["label"],
        "seeds": task_rows["seeds"],
        "budget": [_num(b, 0) if isinstance(b, (int, float)) else b for b in task_rows["budget"]],
        f"{metric} (mean ± s.e.)": [_pm(m, s) for m, s in zip(task_rows["mean"], task_rows["se"])],
        f"{metric} IQM [95% CI]": [_ci(p, lo, hi) for p, lo, hi in zip(task_rows["iqm"], task_rows["iqm_low"], task_rows["iqm_high"])],
        "return (mean ± s.e.)": [_pm(m, s) for m, s in zip(task_rows["return_mean"], task_rows["return_se"])],
        "intrinsic return (mean ± s.e.)": [_pm(m, s) for m, s in
                                           zip(task_rows["intrinsic_return_mean"], task_rows["intrinsic_return_se"])],
    })
    for column in task_rows.columns:
        if column in EXTRA_NAMES and column != metric and task_rows[column].notna().any():
            out[column.replace("_", " ")] = [_num(v) for v in task_rows[column]]
    return out.reset_index(drop=True)


def reference_display(task: str) -> tuple[pd.DataFrame, str] | None:
    ref = references.for_task(task)
    if not ref:
        return None
    df = pd.DataFrame({
        "method (published)": [r["label"] for r in ref["rows"]],
        "budget": [_num(ref["budget"], 0)] * len(ref["rows"]),
        f"{ref['metric']} (mean ± {ref['spread']})": [_pm(r["mean"], r["spread"], 1) for r in ref["rows"]],
    })
    return df, ref["source"]


def build_leaderboard(runs_dir: str | Path, out_dir: str | Path, title: str | None = None,
                      reps: int = 2000) -> dict[str, Path]:
    """Write every leaderboard file for the runs under ``runs_dir``; return their paths."""
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    found = collect(runs_dir)
    if not found.runs and not found.incomplete:
        raise DataError(f"no run records under {runs_dir}", hint="run a grid or `llmexplore run` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    title = title or runs_dir.name
    per_task = per_task_table(found.runs, reps=reps)
    aggregate = aggregate_table(found.runs, reps=reps)
    achievements = crafter_achievement_table(found.runs)
    files: dict[str, Path] = {}

    images: dict[str, list[Path]] = {}
    tasks = sorted(per_task["task"].unique()) if not per_task.empty else []
    for task in tasks:
        metric = per_task[per_task["task"] == task]["metric"].iloc[0]
        safe = task.replace(":", "-")
        paths = [plot_curves(found.runs, task, metric, out_dir / f"curves_{safe}.png"),
                 plot_achievements(achievements, task, out_dir / f"achievements_{safe}.png")]
        images[task] = [p for p in paths if p is not None]

    files["markdown"] = out_dir / "leaderboard.md"
    atomic_write_text(files["markdown"], _markdown(title, found, per_task, aggregate, achievements, images, tasks))
    files["csv"] = out_dir / "leaderboard.csv"
    atomic_write_text(files["csv"], _csv(per_task, tasks))
    files["latex"] = out_dir / "leaderboard.tex"
    atomic_write_text(files["latex"], _latex(per_task, aggregate, tasks))
    files["html"] = out_dir / "index.html"
    atomic_write_text(files["html"], _html(title, found, per_task, aggregate, achievements, images, tasks))
    return files


def _header(title: str, found: Collection) -> list[str]:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"# Leaderboard: {title}", "",
            f"{len(found.runs)} complete runs ({len(found.incomplete)} incomplete, listed at the end); {stamp}.",
            "Metric columns: mean ± standard error over seeds, and the interquartile mean with a 95% "
            "stratified-bootstrap confidence interval. Published results appear in separate tables, "
            "never mixed with runs made here.", ""]


def _aggregate_notes(aggregate: pd.DataFrame) -> list[str]:
    notes = ["Per-task normalisation: " + "; ".join(f"{fam} {metric}: {why}"
                                                   for (fam, metric), (_, _, why) in NORMALIZATION.items())]
    return notes


def _aggregate_display(aggregate: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "method": aggregate["label"],
        "tasks": aggregate["tasks"],
        "runs": aggregate["runs"],
        "normalised IQM [95% CI]": [_ci(p, lo, hi, 3) for p, lo, hi in
                                    zip(aggregate["normalized_iqm"], aggregate["iqm_low"], aggregate["iqm_high"])],
        "normalised mean": [_num(v, 3) for v in aggregate["normalized_mean"]],
    })


def _achievements_display(achievements: pd.DataFrame, task: str) -> pd.DataFrame:
    rows = achievements[achievements["task"] == task].drop(columns=["task"]).set_index("label").T
    return rows.map(lambda v: _num(v, 1) if isinstance(v, float) else str(v))


def _markdown(title, found, per_task, aggregate, achievements, images, tasks) -> str:
    lines = _header(title, found)
    if not aggregate.empty and aggregate["tasks"].max() > 1:
        lines += ["## Aggregate across tasks", "", _aggregate_display(aggregate).to_markdown(index=False), ""]
        lines += [f"_{n}_" for n in _aggregate_notes(aggregate)] + [""]
    for task in tasks:
        rows = per_task[per_task["task"] == task]
        lines += [f"## {task}", "", task_display(rows).to_markdown(index=False), ""]
        ref = reference_display(task)
        if ref:
            df, source = ref
            lines += ["Published results (not run here; their ± is the spread the source reports, named in the "
                      "column: s.d. is a standard deviation over seeds, not a standard error):", "",
                      df.to_markdown(index=False), "", f"_Source: {source}._", ""]
        if task.startswith("crafter:") and not achievements.empty:
            lines += ["Achievement success rates (% of training episodes within the budget):", "",
                      _achievements_display(achievements, task).to_markdown(), ""]
        for image in images.get(task, []):
            lines += [f"![{image.stem}]({image.name})", ""]
    if found.incomplete:
        lines += ["## Incomplete runs", "", pd.DataFrame(found.incomplete).to_markdown(index=False), ""]
    return "\n".join(lines)


def _csv(per_task: pd.DataFrame, tasks: list[str]) -> str:
    runs = per_task.copy()
    runs.insert(0, "kind", "run")
    runs["source"] = ""
    refs = []
    for task in tasks:
        ref = references.for_task(task)
        for row in (ref or {}).get("rows", []):
            refs.append({"kind": "published", "task": task, "label": row["label"], "metric": ref["metric"],
                         "budget": ref["budget"], "mean": row["mean"], "se": float("nan"), "spread": row["spread"],
                         "spread_kind": ref["spread"], "source": ref["source"]})
    return pd.concat([runs, pd.DataFrame(refs)], ignore_index=True).to_csv(index=False)


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                 ("±", r"$\pm$"), ("–", "--")):
        text = text.replace(a, b)
    return text


def _latex_table(df: pd.DataFrame, caption: str) -> str:
    cols = "l" + "r" * (len(df.columns) - 1)
    head = " & ".join(_latex_escape(str(c)) for c in df.columns)
    body = "\n".join(" & ".join(_latex_escape(str(v)) for v in row) + r" \\" for row in df.itertuples(index=False))
    return "\n".join([r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
                      head + r" \\", r"\midrule", body, r"\bottomrule", r"\end{tabular}",
                      rf"\caption{{{_latex_escape(caption)}}}", r"\end{table}", ""])


def _latex(per_task, aggregate, tasks) -> str:
    parts = ["% Generated by `llmexplore leaderboard`; needs \\usepackage{booktabs}.", ""]
    if not aggregate.empty and aggregate["tasks"].max() > 1:
        parts.append(_latex_table(_aggregate_display(aggregate), "Normalised IQM across tasks (95% CI)."))
    for task in tasks:
        rows = per_task[per_task["task"] == task]
        parts.append(_latex_table(task_display(rows), f"{task}: {rows['metric'].iloc[0]}, mean ± s.e. over seeds."))
    return "\n".join(parts)


def _html(title, found, per_task, aggregate, achievements, images, tasks) -> str:
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}"
             "td:first-child{text-align:left}.ref{color:#555}img{max-width:100%}</style></head><body>",
             f"<h1>Leaderboard: {esc(title)}</h1>",
             f"<p>{len(found.runs)} complete runs, {len(found.incomplete)} incomplete. Mean ± s.e. over seeds; "
             "IQM with a 95% stratified-bootstrap CI. Published results are in separate, grey tables.</p>"]
    if not aggregate.empty and aggregate["tasks"].max() > 1:
        parts += ["<h2>Aggregate across tasks</h2>", _aggregate_display(aggregate).to_html(index=False)]
    for task in tasks:
        rows = per_task[per_task["task"] == task]
        parts += [f"<h2>{esc(task)}</h2>", task_display(rows).to_html(index=False)]
        ref = reference_display(task)
        if ref:
            df, source = ref
            parts += ["<div class='ref'><p>Published results (not run here):</p>", df.to_html(index=False),
                      f"<p><em>Source: {esc(source)}</em></p></div>"]
        if task.startswith("crafter:") and not achievements.empty:
            parts += ["<p>Achievement success rates (%):</p>", _achievements_display(achievements, task).to_html()]
        for image in images.get(task, []):
            parts.append(f"<p><img src='{esc(image.name)}' alt='{esc(image.stem)}'></p>")
    if found.incomplete:
        parts += ["<h2>Incomplete runs</h2>", pd.DataFrame(found.incomplete).to_html(index=False)]
    parts.append("</body></html>")
    return "\n".join(parts)
