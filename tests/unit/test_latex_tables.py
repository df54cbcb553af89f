"""LaTeX leaderboard tables, checked with a LaTeX parser (no TeX engine installs quickly here): display names,
short captions and labels, a separated best value in bold (never a tie), integers as integers, and
``\\resizebox`` only when TeX finds a table wider than the line."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from llmexplore.benchmarks.results.latex import latex_table
from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from tests.unit.test_leaderboard_outputs import _write_runs

latexwalker = pytest.importorskip("pylatexenc.latexwalker")


def _environments(nodes, name: str) -> list:
    """Every environment ``name`` anywhere below ``nodes`` (inside groups and macro arguments too)."""
    found = []
    for node in nodes or []:
        if node is None:
            continue
        if node.isNodeType(latexwalker.LatexEnvironmentNode) and node.environmentname == name:
            found.append(node)
        children = list(getattr(node, "nodelist", None) or [])
        if node.isNodeType(latexwalker.LatexMacroNode) and node.nodeargd:
            children += [a for a in node.nodeargd.argnlist if a is not None]
        found += _environments(children, name)
    return found


def _parse(tex: str) -> list:
    walker = latexwalker.LatexWalker(tex, tolerant_parsing=False)
    nodes, _, _ = walker.get_latex_nodes()
    return nodes


def _rows(tabular) -> list[list[str]]:
    """The body rows of a tabular (between \\midrule and \\bottomrule), split into cells."""
    body = tabular.latex_verbatim().split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    return [[c.strip() for c in row.split(" & ")] for row in body.strip().split("\\\\") if row.strip()]


def test_leaderboard_latex_parses_with_display_names_short_captions_and_bold(tmp_path):
    values = {"none": {"nethack:score": [1.0, 3.0], "crafter:reward-free": [1.0, 2.0, 3.0]},
              "rnd": {"nethack:score": [1.0, 3.0], "crafter:reward-free": [7.0, 8.0, 9.0]}}  # NetHack: a tie
    _write_runs(tmp_path / "runs", values)
    tex = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=100)["latex"].read_text()
    nodes = _parse(tex)
    tables = _environments(nodes, "table")
    assert len(tables) >= 8
    captions, labels = [], []
    for table in tables:
        text = table.latex_verbatim()
        caption = re.search(r"\\caption\{(.*?)\}\n", text).group(1)
        captions.append(caption)
        labels.append(re.search(r"\\label\{([^}]+)\}", text).group(1))
        assert len(caption) <= 80, caption  # notes go under the table, not into the caption
        tabulars = _environments(table.nodelist, "tabular")
        assert len(tabulars) == 1
        columns = len(re.match(r"\\begin\{tabular\}\{([lr]+)\}", tabulars[0].latex_verbatim()).group(1))
        assert all(len(row) == columns for row in _rows(tabulars[0]))
        assert "\\ifdim\\wd0>\\linewidth\\resizebox" in text  # scaled only if wider than the line
    assert all(len(label) <= 30 and re.fullmatch(r"tab:[a-z0-9-]+", label) for label in labels)
    assert "NetHack score: progression (part 1 of 2)." in captions
    assert "Probability of improvement, NetHack score." in captions

    by_label = {label: table for label, table in zip(labels, tables)}
    # display names, never the registry's lower-case names, in the method columns
    rows = _rows(_environments(by_label["tab:crafter-reward-free"].nodelist, "tabular")[0])
    assert [r[0] for r in rows] == ["No bonus", "RND"]
    # every run of RND beats every run of No bonus: P(X > Y) is [1, 1], so RND's mean and IQM are bold
    assert rows[1][3].startswith("\\textbf{8.00") and rows[1][4].startswith("\\textbf{8.00")
    assert not any(cell.startswith("\\textbf") for cell in rows[0])
    rule = "Bold: a column's best value, only where the interval of P(X $>$ Y)"
    assert rule in by_label["tab:crafter-reward-free"].latex_verbatim()
    # a tie is no separation: nothing bold in the NetHack table
    nethack = _rows(_environments(by_label["tab:nethack-score"].nodelist, "tabular")[0])
    assert not any(cell.startswith("\\textbf") for row in nethack for cell in row)
    # across tasks the tie keeps P(RND > No bonus)'s interval down to 0.5: no bold either
    aggregate = _rows(_environments(by_label["tab:agg"].nodelist, "tabular")[0])
    assert not any(cell.startswith("\\textbf") for row in aggregate for cell in row)
    # integers as integers: the achievements table's seeds row
    achievements = _rows(_environments(by_label["tab:ach-crafter-reward-free"].nodelist, "tabular")[0])
    assert achievements[0][0] == "seeds" and achievements[0][1].startswith("3\\textsuperscript")


def test_latex_table_bolds_the_cells_it_is_given_and_prints_integers_as_integers():
    df = pd.DataFrame({"method": ["a", "b", "c"], "runs": [2.0, 3.0, 3.0], "gap": ["0.10", "0.10", "0.30"],
                       "score": ["1.00 ± 0.1", "–", "1.00 ± 0.2"]})
    tex = latex_table(df, "Short.", "tab:x", notes=["A note."], bold={"gap": {1}})
    rows = _rows(_environments(_parse(tex), "tabular")[0])
    assert [r[1] for r in rows] == ["2", "3", "3"]
    assert [r[2].startswith("\\textbf") for r in rows] == [False, True, False]
    assert not any(r[3].startswith("\\textbf") for r in rows)
    assert "\\footnotesize\nA note." in tex and "\\caption{Short.}" in tex
