"""Statistics, Crafter's published random-agent score, and aggregation over records."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmexplore.benchmarks.results.statistics import iqm, mean_and_se, stratified_bootstrap_ci
from llmexplore.envs.crafter.stats import published_runs, run_score


def test_iqm_trims_a_quarter_from_each_end():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)
    assert iqm([0, 0, 0, 0, 100, 100, 100, 1000]) == pytest.approx(50.0)


def test_mean_and_standard_error():
    mean, se = mean_and_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert np.isnan(mean_and_se([3.0])[1])


def test_bootstrap_interval_covers_the_estimate_and_narrows_with_data():
    rng = np.random.default_rng(0)
    small = rng.normal(10, 2, 5)
    large = rng.normal(10, 2, 200)
    lo_s, hi_s = stratified_bootstrap_ci([small], np.mean, reps=1000)
    lo_l, hi_l = stratified_bootstrap_ci([large], np.mean, reps=1000)
    assert lo_s <= small.mean() <= hi_s and lo_l <= large.mean() <= hi_l
    assert hi_l - lo_l < hi_s - lo_s
    assert stratified_bootstrap_ci([small], np.mean, reps=200, seed=3) == stratified_bootstrap_ci([small], np.mean, reps=200, seed=3)


def test_bootstrap_is_stratified():
    # one stratum all zeros, one all ones: every resample keeps both sizes, so the mean is fixed
    lo, hi = stratified_bootstrap_ci([np.zeros(3), np.ones(7)], np.mean, reps=300)
    assert lo == pytest.approx(0.7) and hi == pytest.approx(0.7)


def test_published_random_agent_score_is_reproduced(shared_data):
    runs = json.loads((shared_data / "crafter" / "crafter_noreward-random.json").read_text())
    scores = [run_score(episodes)[0] for _, _, episodes in published_runs(runs, budget=1_000_000)]
    assert len(scores) == len(runs)
    assert round(float(np.mean(scores)), 1) == 1.6


def test_published_human_score_is_reproduced(shared_data):
    runs = json.loads((shared_data / "crafter" / "crafter_reward-human.json").read_text())
    scores = [run_score(episodes)[0] for _, _, episodes in published_runs(runs, budget=None)]
    assert round(float(np.mean(scores)), 1) == 50.5


def test_normalisation_uses_the_published_scores_to_two_decimals(shared_data):
    from llmexplore.envs import get_family

    random_runs = json.loads((shared_data / "crafter" / "crafter_noreward-random.json").read_text())
    human_runs = json.loads((shared_data / "crafter" / "crafter_reward-human.json").read_text())
    random_score = np.mean([run_score(e)[0] for _, _, e in published_runs(random_runs, budget=1_000_000)])
    human_score = np.mean([run_score(e)[0] for _, _, e in published_runs(human_runs, budget=None)])
    points = get_family("crafter").normalization
    low, high, why = points.low, points.high, points.note
    assert (low, high) == (round(float(random_score), 2), round(float(human_score), 2)) == (1.55, 50.53)
    assert "1.55" in why and "50.53" in why


def test_every_plus_minus_says_what_it_is():
    import pandas as pd

    from llmexplore.benchmarks.results.board_sections import reference_display, task_display

    df, _ = reference_display("crafter:reward-free")
    assert list(df.columns)[-1] == "score (mean ± s.d.)"
    rows = pd.DataFrame({"task": ["crafter:reward"], "label": ["m"], "seeds": [2], "budget": [10], "metric": ["score"], "mean": [1.0],
                         "se": [0.1], "iqm": [1.0], "iqm_low": [0.9], "iqm_high": [1.1], "return_mean": [1.0],
                         "return_se": [0.1], "intrinsic_return_mean": [0.5], "intrinsic_return_se": [0.1]})
    table = task_display(rows)
    plus_minus = [c for c in table.columns if "±" in str(table[c].iloc[0])]
    assert plus_minus and all(c.endswith("(mean ± s.e.)") for c in plus_minus)
