"""Leaderboard outputs from run records: per-run scores, seed marks, probability of improvement, LaTeX."""

from __future__ import annotations

import csv
import itertools
import json
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from llmexplore.benchmarks.results.latex import MAX_LATEX_COLUMNS
from llmexplore.benchmarks.results.leaderboard import FewSeedsWarning, build_leaderboard
from llmexplore.benchmarks.run.record import RunRecord
from llmexplore.benchmarks.results.statistics import (
    performance_profile,
    performance_profile_band,
    probability_of_improvement,
    probability_of_improvement_ci,
    stratified_bootstrap_ci,
)

#: method -> task -> per-seed metric values (a negative NetHack score tests the LaTeX minus)
VALUES = {"none": {"nethack:score": [1.0, 3.0], "crafter:reward-free": [2.0, 4.0]},
          "rnd": {"nethack:score": [2.0, 5.0], "crafter:reward-free": [4.0, 6.0]}}
METRIC = {"nethack:score": "progression", "crafter:reward-free": "score"}


def _write_runs(root, values=VALUES, extra_metrics=None, curve=()):
    """Complete records of ``values`` (method -> task -> per-seed metric), with ``extra_metrics`` added and
    ``curve`` (CurvePoint fields) as every record's learning curve."""
    for method, tasks in values.items():
        for task, seeds in tasks.items():
            for seed, value in enumerate(seeds):
                metrics = {METRIC[task]: value, "return": 10 * value + seed, "intrinsic_return": 0.5,
                           "score": -12.5 if task.startswith("nethack") else value, **(extra_metrics or {})}
                RunRecord(status="complete", cell=f"{method}/{task}/seed{seed}",
                          spec={"method": method, "task": task, "seed": seed}, environment={}, started_at="t0",
                          updated_at="t1", budget=4096, env_steps=4096, wall_seconds=1.0, steps_per_second=1.0,
                          metric=METRIC[task], final_metrics=metrics, curve=list(curve),
                          final_window="over all training episodes within the budget",
                          ).write(root / method / task.replace(":", "-") / str(seed))


def _brute_force_p(x, y):
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(x, y))
    return wins / (len(x) * len(y))


def test_probability_of_improvement_matches_mann_whitney_and_a_loop():
    rng = np.random.default_rng(1)
    tasks_x = [rng.integers(0, 5, 7).astype(float), rng.normal(0, 1, 4)]
    tasks_y = [rng.integers(0, 5, 6).astype(float), rng.normal(0.5, 1, 9)]  # integer scores: ties
    expected_u = np.mean([mannwhitneyu(x, y).statistic / (len(x) * len(y)) for x, y in zip(tasks_x, tasks_y)])
    expected_loop = np.mean([_brute_force_p(x, y) for x, y in zip(tasks_x, tasks_y)])
    assert probability_of_improvement(tasks_x, tasks_y) == pytest.approx(expected_u)
    assert probability_of_improvement(tasks_x, tasks_y) == pytest.approx(expected_loop)
    assert probability_of_improvement([[1.0, 1.0]], [[1.0]]) == 0.5
    assert probability_of_improvement([[2.0, 3.0]], [[1.0]]) == 1.0


def test_probability_of_improvement_interval_is_a_stratified_bootstrap():
    x, y = [np.array([1.0, 2.0, 3.0, 4.0])], [np.array([2.5, 3.5, 4.5])]
    low, high = probability_of_improvement_ci(x, y, reps=4000)
    point = probability_of_improvement(x, y)
    assert low < point < high
    # a loop over resamples with the same generator draws gives the same interval
    rng = np.random.default_rng(0)
    x_draws, y_draws = rng.integers(0, 4, (4000, 4)), rng.integers(0, 3, (4000, 3))
    loop = [_brute_force_p(x[0][i], y[0][j]) for i, j in zip(x_draws, y_draws)]
    assert (low, high) == pytest.approx(tuple(np.percentile(loop, [2.5, 97.5])))
    # fully separated samples: every resample says 1
    assert probability_of_improvement_ci([[5.0, 6.0]], [[1.0, 2.0]], reps=200) == (1.0, 1.0)
    assert all(np.isnan(probability_of_improvement_ci([[5.0]], [[1.0]], reps=200)))


def test_one_seed_gives_no_interval():
    assert all(np.isnan(stratified_bootstrap_ci([[3.0]], np.mean)))
    assert all(np.isnan(stratified_bootstrap_ci([[3.0], [4.0]], np.mean)))


def test_performance_profile_counts_runs_above_each_threshold():
    thresholds = np.array([0.0, 1.5, 3.5])
    strata = [[1.0, 2.0, 3.0, 4.0], [0.0, 5.0]]
    expected = [np.mean([np.mean(np.array(s) > t) for s in strata]) for t in thresholds]
    assert performance_profile(strata, thresholds) == pytest.approx(expected)
    low, high = performance_profile_band(strata, thresholds, reps=500)
    assert np.all(low <= np.array(expected) + 1e-12) and np.all(np.array(expected) <= high + 1e-12)


def test_scores_files_improvement_and_latex(tmp_path):
    runs = tmp_path / "runs"
    _write_runs(runs)
    files = build_leaderboard(runs, tmp_path / "board", reps=300)
    with open(files["scores_csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8
    by_key = {(r["method"], r["task"], int(r["seed"])): r for r in rows}
    for method, tasks in VALUES.items():
        for task, seeds in tasks.items():
            for seed, value in enumerate(seeds):
                row = by_key[(method, task, seed)]
                assert float(row["metric_value"]) == value and float(row[METRIC[task]]) == value
                assert float(row["return"]) == 10 * value + seed and int(row["budget"]) == 4096
    data = json.loads(files["scores_json"].read_text())
    assert data["schema"] == "llmexplore.scores" and len(data["runs"]) == 8
    assert {r["method"] for r in data["runs"]} == {"none", "rnd"}

    md = files["markdown"].read_text()
    html = files["html"].read_text()
    p_crafter = _brute_force_p(VALUES["none"]["crafter:reward-free"], VALUES["rnd"]["crafter:reward-free"])
    for text in (md, html):
        assert "P(X &gt; Y)" in text or "P(X > Y)" in text
        assert f"{p_crafter:.2f} [" in text
        assert "2†" in text and "[min, max]" in text
    assert "profile_all.png" in md and (tmp_path / "board" / "profile_crafter-reward-free.png").is_file()

    tex = files["latex"].read_text()
    labels = re.findall(r"\\label\{([^}]+)\}", tex)
    assert len(labels) == len(set(labels)) >= 6
    assert {"tab:agg", "tab:nethack-score", "tab:nethack-score-2", "tab:pi-all", "tab:ach-crafter-reward-free",
            "tab:pub-crafter-reward-free"} <= set(labels)
    assert "$-$12.50" in tex and "-12.5" not in tex
    _check_latex_fits(tex, tmp_path)


def _check_latex_fits(tex: str, tmp_path):
    """Compile where a TeX engine exists; otherwise every tabular is scaled to the line only when wider than it,
    and stays readable."""
    tables = re.findall(r"\\begin\{table\}.*?\\end\{table\}", tex, flags=re.S)
    assert tables
    for table in tables:
        assert "\\ifdim\\wd0>\\linewidth\\resizebox{\\linewidth}{!}{\\usebox0}\\else\\usebox0\\fi" in table
        assert "\\toprule" in table and "\\bottomrule" in table
        columns = len(re.search(r"\\begin\{tabular\}\{([lr]+)\}", table).group(1))
        rows = [r for r in table.split("\n") if r.endswith("\\\\")]
        assert all(r.count(" & ") == columns - 1 for r in rows)
        # scaled to the line width; wide tables are split, and a natural width past 2.5 lines would shrink
        # the text below legibility
        assert columns <= MAX_LATEX_COLUMNS
        widest = max(len(re.sub(r"\\[a-z]+\{?|[{}$]", "", r)) for r in rows)
        assert widest * 4.5 <= 2.5 * 345, "table too wide to scale legibly"
    engine = shutil.which("pdflatex") or shutil.which("lualatex") or shutil.which("tectonic")
    if engine is None:
        return
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\usepackage{graphicx}\\begin{document}\n"
                   + tex + "\n\\end{document}\n")
    result = subprocess.run([engine, "-interaction=nonstopmode", doc.name], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "Overfull \\hbox" not in (tmp_path / "doc.log").read_text()


def test_one_seed_cells_warn_and_show_no_interval(tmp_path):
    _write_runs(tmp_path / "runs", {"none": {"nethack:score": [1.0]}, "rnd": {"nethack:score": [2.0]}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=100)
    assert any(issubclass(w.category, FewSeedsWarning) and "one seed" in str(w.message) for w in caught)
    md = files["markdown"].read_text()
    assert "(no interval)" in md and "[1.00, 1.00]" not in md and "1 run in a task: no interval" in md
