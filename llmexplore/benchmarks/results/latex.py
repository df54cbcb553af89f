"""LaTeX tables for papers: booktabs, short captions, notes under the table, the cells the leaderboard marks
(a separated best: separation.py) in bold, and ``\\resizebox`` only when TeX finds the table wider than the
line."""

from __future__ import annotations

import re
from typing import Collection, Mapping, Sequence

import pandas as pd

#: a wider table is split into parts that share the first column, so no part needs shrinking much
MAX_LATEX_COLUMNS = 6


def latex_escape(text: str) -> str:
    """Text for a LaTeX cell: special characters escaped, a leading minus typeset as a minus sign."""
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                 ("$", r"\$"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
        text = text.replace(a, b)
    text = re.sub(r"(?<![\w.])-(?=\d)", "$-$", text)  # a negative number, not a word's hyphen or a range
    for a, b in (("->", r"$\to$"), ("±", r"$\pm$"), ("–", "--"), ("†", r"\textsuperscript{\dag}"), (">", r"$>$"), ("<", r"$<$")):
        text = text.replace(a, b)
    return text


def _cell(value: object) -> str:
    """A cell's text: integers as integers (a float 2.0 is '2'), everything else as displayed."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def latex_table(df: pd.DataFrame, caption: str, label: str, notes: Sequence[str] = (),
                bold: Mapping[str, Collection[int]] | None = None) -> str:
    """One booktabs table: ``caption`` above it, ``notes`` in small type below it, the rows ``bold`` names for a
    column (column -> row numbers) in bold; scaled to the line width only if TeX finds it wider than the line."""
    cols = "l" + "r" * (len(df.columns) - 1)
    bold = bold or {}
    head = " & ".join(latex_escape(str(c)) for c in df.columns)
    lines = []
    for row_number, row in enumerate(df.itertuples(index=False)):
        cells = []
        for column, value in zip(df.columns, row):
            text = latex_escape(_cell(value))
            cells.append(rf"\textbf{{{text}}}" if row_number in bold.get(column, ()) else text)
        lines.append(" & ".join(cells) + r" \\")
    tabular = [rf"\begin{{tabular}}{{{cols}}}", r"\toprule", head + r" \\", r"\midrule", *lines, r"\bottomrule",
               r"\end{tabular}"]
    out = [r"\begin{table}[t]", r"\centering", r"\small", rf"\caption{{{latex_escape(caption)}}}",
           rf"\label{{{label}}}",
           # natural width first; \resizebox only when that is wider than the line
           r"\sbox0{%", *tabular, "}%",
           r"\ifdim\wd0>\linewidth\resizebox{\linewidth}{!}{\usebox0}\else\usebox0\fi"]
    if notes:
        out += [r"\par\smallskip", r"\begin{minipage}{\linewidth}\footnotesize",
                " ".join(latex_escape(n) for n in notes), r"\end{minipage}"]
    out += [r"\end{table}", ""]
    return "\n".join(out)


def latex_tables(df: pd.DataFrame, caption: str, label: str, notes: Sequence[str] = (),
                 bold: Mapping[str, Collection[int]] | None = None) -> list[str]:
    """One table, or several of at most MAX_LATEX_COLUMNS columns (labels ``<label>``, ``<label>-2``, ...);
    the notes go under the last part."""
    rest = list(df.columns[1:])
    step = MAX_LATEX_COLUMNS - 1
    chunks = [rest[i:i + step] for i in range(0, len(rest), step)] or [[]]
    out = []
    for number, chunk in enumerate(chunks, start=1):
        part = df[[df.columns[0], *chunk]]
        last = number == len(chunks)
        if len(chunks) == 1:
            out.append(latex_table(part, caption, label, notes, bold))
        else:
            suffix = "" if number == 1 else f"-{number}"
            out.append(latex_table(part, f"{caption.rstrip('.')} (part {number} of {len(chunks)}).", label + suffix,
                                   notes if last else (), bold))
    return out
