"""rliable's aggregates against its published formulas, and one interval rule in every leaderboard table.

rliable itself does not install beside our pins (it needs arch < 8, which fails to import with pandas 3),
so each formula is written out here independently of llmexplore's implementation.
"""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest

from llmexplore.benchmarks.results.cells import FEW_MARK, band_name
from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from llmexplore.benchmarks.results.statistics import (
    FEW_RUNS,
    aggregate_estimates,
    optimality_gap,
    stratified_bootstrap_ci,
)
from tests.unit.test_leaderboard_outputs import _write_runs


def _iqm_by_hand(pooled: np.ndarray) -> float:
    """rliable: mean of the middle 50% of all runs (for n divisible by 4, the sorted [n/4, 3n/4) slice)."""
    x = np.sort(pooled)
    assert x.size % 4 == 0
    return float(x[x.size // 4: 3 * x.size // 4].mean())


def _gap_by_hand(pooled: np.ndarray, gamma: float = 1.0) -> float:
    return sum(gamma - v if v < gamma else 0.0 for v in pooled) / len(pooled)


def _by_hand(strata: list[np.ndarray]) -> dict[str, float]:
    pooled = np.concatenate(strata)
    task_means = [sum(s) / len(s) for s in strata]
    return {"iqm": _iqm_by_hand(pooled), "median": statistics.median(task_means),
            "mean": sum(task_means) / len(task_means), "optimality_gap": _gap_by_hand(pooled)}


def test_aggregates_follow_rliables_formulas():
    rng = np.random.default_rng(4)
    strata = [rng.normal(0.6, 0.5, 4) for _ in range(3)]  # 12 runs: some above 1, some below 0
    estimates = aggregate_estimates(strata, reps=50)
    for name, value in _by_hand(strata).items():
        assert estimates[name][0] == pytest.approx(value), name
    assert optimality_gap([0.2, 1.5, 1.0, -1.0]) == pytest.approx((0.8 + 0 + 0 + 2.0) / 4)


def test_aggregate_intervals_are_a_stratified_bootstrap():
    rng = np.random.default_rng(5)
    strata = [rng.normal(0.5, 0.3, 4), rng.normal(0.2, 0.3, 8)]
    reps = 400
    estimates = aggregate_estimates(strata, reps=reps, seed=0)
    # a loop with the same generator draws: each task's runs resampled within the task, then the formulas by hand
    draws = np.random.default_rng(0)
    values: dict[str, list[float]] = {name: [] for name in estimates}
    for _ in range(reps):
        sample = [s[draws.integers(0, s.size, s.size)] for s in strata]
        for name, value in _by_hand(sample).items():
            values[name].append(value)
    for name, (point, low, high) in estimates.items():
        expected = np.percentile(values[name], [2.5, 97.5])
        assert (low, high) == pytest.approx(tuple(expected)), name
        assert low <= point <= high or name == "median"
    # stratified: a task's size never changes, so with constant tasks every aggregate is fixed
    fixed = aggregate_estimates([np.zeros(3), np.ones(5)], reps=200)
    assert fixed["mean"] == pytest.approx((0.5, 0.5, 0.5))
    assert fixed["optimality_gap"] == pytest.approx((3 / 8, 3 / 8, 3 / 8))
    assert fixed["iqm"] == pytest.approx((0.75, 0.75, 0.75))  # middle 4 of [0,0,0,1,1,1,1,1]
    # one run per task: no interval at all
    assert all(np.isnan(v) for v in aggregate_estimates([[0.3], [0.4]], reps=50)["iqm"][1:])
    assert stratified_bootstrap_ci([np.zeros(3), np.ones(7)], np.mean, reps=50) == pytest.approx((0.7, 0.7))


def _tables(md: str) -> list[list[str]]:
    """Each Markdown table's lines."""
    return [block.strip().split("\n") for block in re.findall(r"(?:^\|.*\|$\n?)+", md, flags=re.M)]


def test_few_runs_are_marked_and_never_called_95_percent(tmp_path):
    _write_runs(tmp_path / "runs")  # 2 seeds per cell, 2 tasks
    files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=200)
    md, html, tex = (files[k].read_text() for k in ("markdown", "html", "latex"))
    for text in (md, html, tex):
        assert "95% CI" not in text and "95% stratified" not in text
    assert "not a 95% confidence interval" in md and "2 runs in a task" in md
    tables = _tables(md)
    aggregate = next(t for t in tables if "optimality gap" in t[0])
    improvement = [t for t in tables if "P(X > Y)" in t[0]]
    assert len(improvement) == 3  # across tasks and per task
    for table in [aggregate, *improvement]:
        assert "[interval]" in table[0]
        for row in table[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            intervals = [c for c in cells if re.search(r"\[.*\]", c)]
            assert intervals and all(c.endswith(FEW_MARK) for c in intervals), row
    assert all(name in aggregate[0] for name in ("IQM", "median", "mean", "optimality gap"))
    assert band_name(2) == "bootstrap band of 2 runs in a task: not a 95% band"


def test_enough_runs_are_95_percent_intervals(tmp_path):
    values = {m: {t: list(np.linspace(1.0, 3.0, FEW_RUNS) + shift) for t in ("nethack:score", "crafter:reward-free")}
              for m, shift in (("none", 0.0), ("rnd", 0.5))}
    _write_runs(tmp_path / "runs", values)
    md = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=200)["markdown"].read_text()
    assert "[95% CI]" in md and "not a 95%" not in md and "95% confidence intervals" in md
    for table in _tables(md):
        assert not any(re.search(r"\]" + FEW_MARK, row) for row in table)
    assert band_name(FEW_RUNS) == "95% stratified-bootstrap band"
