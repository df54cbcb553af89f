"""The leaderboard's sections written as Markdown, HTML, LaTeX and CSV."""

from __future__ import annotations

import html
from datetime import datetime, timezone

import pandas as pd

from llmexplore.benchmarks.results import references
from llmexplore.benchmarks.results.board import Board, Image, Note, Reference, Section, Table, bold_cells
from llmexplore.benchmarks.results.board_sections import (
    EXCLUDED_HEADING,
    PUBLISHED_NOTE,
    excluded_display,
    inert_rows,
)
from llmexplore.benchmarks.results.cells import FEW_MARK, FEW_SEEDS
from llmexplore.benchmarks.results.display import method_display_name
from llmexplore.benchmarks.results.latex import latex_tables
from llmexplore.benchmarks.results.table_labels import table_label

#: the columns of run tables whose cells name a row label (a method), shown by display name in LaTeX
LABEL_COLUMNS = ("method", "X", "Y")


def counted(board: Board) -> str:
    """How many records count, how many of those are inert, and how many do not count."""
    found = board.found
    inert = f"{len(board.inert)} of them inert, not ranked; " if board.inert else ""
    return (f"{len(found.runs)} runs counted ({inert}{len(found.excluded)} not counted: incomplete or refused, "
            "listed with the reason at the end)")


def _intro() -> str:
    return ("Metric columns: mean ± standard error over seeds, and the interquartile mean with a "
            f"stratified-bootstrap interval, a 95% confidence interval only where a cell has at least {FEW_SEEDS} "
            f"runs per task; cells with fewer are marked {FEW_MARK} and the note below says what "
            "their interval is. Published results appear in separate tables, never mixed with runs made here.")


def once_notes(parts_of: list[Section]) -> list[str]:
    """The notes that say the same under every table, each once, in the order they first appear."""
    return list(dict.fromkeys(p.once for s in parts_of for p in s.parts if isinstance(p, Note) and p.once))


def _with_bold(df: pd.DataFrame, table: Table, mark: tuple[str, str]) -> pd.DataFrame:
    """``df`` (the table's cells) with its bold cells as text wrapped in ``mark`` (opening, closing)."""
    if not table.bold:
        return df
    out = df.astype(str)
    for column, rows in bold_cells(table).items():
        for row in rows:
            out.iloc[row, out.columns.get_loc(column)] = f"{mark[0]}{out.iloc[row][column]}{mark[1]}"
    return out


def markdown(board: Board, parts_of: list[Section]) -> str:
    """leaderboard.md: the page, with the notes common to every table once at the top."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Leaderboard: {board.title}", "", f"{counted(board)}; {stamp}.",
             _intro() + " Per-run values: scores.csv and scores.json.", ""]
    lines += [f"_{text}_\n" for text in once_notes(parts_of)]
    for section in parts_of:
        lines += [f"## {section.heading}", ""]
        for part in section.parts:
            match part:
                case Table():
                    shown = _with_bold(part.df, part, ("**", "**"))
                    lines += [part.caption, "", shown.to_markdown(index=part.show_index), ""]
                case Note() if part.once is None:
                    lines += [f"_{part.text}_", ""]
                case Reference():
                    lines += [PUBLISHED_NOTE, "", part.df.to_markdown(index=False), "",
                              f"_Source: {part.source}._", ""]
                case Image():
                    lines += [f"![{part.path.stem}]({part.path.name})", ""]
    if board.found.excluded:
        lines += [f"## {EXCLUDED_HEADING}", "", excluded_display(board.found.excluded).to_markdown(index=False), ""]
    return "\n".join(lines)


def _html_table(table: Table) -> str:
    """The table in HTML, its bold cells in <strong>."""
    shown = _with_bold(table.df.map(lambda v: html.escape(str(v))), table, ("<strong>", "</strong>"))
    shown.columns = [html.escape(str(c)) for c in shown.columns]
    shown.index = [html.escape(str(i)) for i in shown.index]
    return shown.to_html(index=table.show_index, escape=False)


def page_html(board: Board, parts_of: list[Section]) -> str:
    """index.html: the same page as the Markdown, bold cells included, with the plots."""
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(board.title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}"
             "td:first-child{text-align:left}.ref{color:#555}.note{color:#444;font-size:90%}"
             "img{max-width:100%}</style></head><body>",
             f"<h1>Leaderboard: {esc(board.title)}</h1>",
             f"<p>{esc(counted(board))}. {esc(_intro())} Per-run values: "
             "<a href='scores.csv'>scores.csv</a>, <a href='scores.json'>scores.json</a>.</p>"]
    parts += [f"<p class='note'><em>{esc(text)}</em></p>" for text in once_notes(parts_of)]
    for section in parts_of:
        parts.append(f"<h2>{esc(section.heading)}</h2>")
        for part in section.parts:
            match part:
                case Table():
                    parts += [f"<p>{esc(part.caption)}</p>", _html_table(part)]
                case Note() if part.once is None:
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


def leaderboard_csv(board: Board) -> str:
    """leaderboard.csv: the per-task rows, the published rows and the records not counted, one table."""
    runs = board.per_task.copy()
    runs.insert(0, "kind", "run")
    runs["source"] = ""
    refs = []
    for task in board.tasks:
        ref = references.for_task(task)
        for row in (ref or {}).get("rows", []):
            refs.append({"kind": "published", "task": task, "label": row["label"], "metric": ref["metric"],
                         "budget": ref["budget"], "mean": row["mean"], "se": float("nan"), "spread": row["spread"],
                         "spread_kind": ref["spread"], "source": ref["source"]})
    tables = [runs, pd.DataFrame(refs)]
    if board.inert:
        inert = inert_rows(board.inert)
        inert.insert(0, "kind", "inert")
        tables.append(inert)
    if board.found.excluded:
        skipped = excluded_display(board.found.excluded).rename(columns={"path": "run_dir"})
        skipped.insert(0, "kind", "not counted")
        tables.append(skipped)
    return pd.concat(tables, ignore_index=True).to_csv(index=False)


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


def latex_document_body(board: Board, parts_of: list[Section]) -> str:
    """Every table of the leaderboard; needs \\usepackage{booktabs} and \\usepackage{graphicx}."""
    names = _display_names(board)
    parts = ["% Generated by `llmexplore leaderboard`; needs \\usepackage{booktabs} and \\usepackage{graphicx}.",
             "% A table wider than \\linewidth is scaled to it; in a two-column layout use table* for the wide ones.",
             ""]
    for section in parts_of:
        pending: Table | None = None  # the last table, held until the notes that follow it
        notes: list[str] = []
        for part in [*section.parts, None]:
            if isinstance(part, Note) and pending:
                if part.latex:
                    notes.append(part.text)
                continue
            if pending:
                parts.extend(latex_tables(_with_display_names(pending.df, names, pending.show_index),
                                          pending.latex_caption or pending.caption, pending.label, notes,
                                          bold_cells(pending)))
                pending, notes = None, []
            if isinstance(part, Table):
                pending = part
            elif isinstance(part, Reference):
                parts.extend(latex_tables(part.df, "Published results (not run here).", part.label,
                                          [f"Source: {part.source}."]))
    if board.found.excluded:
        parts.extend(latex_tables(excluded_display(board.found.excluded), f"{EXCLUDED_HEADING}.",
                                  table_label("not counted"), ["Incomplete or refused records, with the reason."]))
    return "\n".join(parts)
