"""What a new user reads in a leaderboard (issue 52, items 3 and 9): bold only for a best value separated
from the rest, each note once, notes only about what the page shows, no return column or panel where
the task has no reward, a title that names the runs, and plot titles that fit their figure."""

from __future__ import annotations

import re

import pandas as pd

from llmexplore.benchmarks.results.aggregate import collect
from llmexplore.benchmarks.results.curve_plots import curve_figure, profile_figure
from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from llmexplore.benchmarks.results.separation import separated_best
from llmexplore.benchmarks.run.record import CurvePoint
from tests.unit.test_leaderboard_outputs import _write_runs

#: the issue's case: 1.54 ± 0.07 beside 1.50 ± 0.02, the runs overlapping (P(X > Y) 0.56 [0, 1])
OVERLAPPING = {"rnd": {"crafter:reward-free": [1.42, 1.54, 1.66]}, "none": {"crafter:reward-free": [1.47, 1.50, 1.53]}}


def test_an_overlapping_best_is_not_bold(tmp_path):
    _write_runs(tmp_path / "runs", OVERLAPPING)
    files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=200)
    md, tex = files["markdown"].read_text(), files["latex"].read_text()
    assert "1.54 ± 0.07" in md and "1.50 ± 0.02" in md
    assert "**" not in md and "\\textbf" not in tex and "<strong>" not in files["html"].read_text()
    assert "Bold: a column's best value, only where the interval of P(X > Y)" in md


def test_a_separated_best_is_bold_in_every_format(tmp_path):
    _write_runs(tmp_path / "runs", {"rnd": {"crafter:reward-free": [7.0, 8.0, 9.0]},
                                    "none": {"crafter:reward-free": [1.0, 2.0, 3.0]}})
    files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=200)
    md, tex, page = (files[k].read_text() for k in ("markdown", "latex", "html"))
    assert "**8.00 ± 0.58**" in md and "**8.00 [" in md and md.count("**") == 4
    assert "\\textbf{8.00 $\\pm$ 0.58}" in tex and "<strong>8.00 ± 0.58</strong>" in page


def test_separation_reads_the_pair_either_way_round_and_lower_can_be_better():
    pairs = pd.DataFrame({"x": ["a", "a"], "y": ["b", "c"], "low": [0.7, 0.1], "high": [0.9, 0.3]})
    # a beats b; c beats a (P(a > c) in [0.1, 0.3], so P(c > a) in [0.7, 0.9]) but c never met b
    assert separated_best([2.0, 1.0, 0.5], ["a", "b", "c"], "max", pairs.iloc[:1]) is None  # c: no comparison
    assert separated_best([2.0, 1.0], ["a", "b"], "max", pairs.iloc[:1]) == 0
    assert separated_best([0.5, 0.9], ["a", "b"], "min", pairs.iloc[:1]) == 0
    assert separated_best([1.0, 3.0], ["a", "c"], "max", pairs.iloc[1:]) == 1
    assert separated_best([2.0, 2.0], ["a", "b"], "max", pairs.iloc[:1]) is None  # a tie
    assert separated_best([2.0, 1.0], ["a", "b"], "max", pairs.assign(low=0.5).iloc[:1]) is None


def test_notes_once_only_about_the_tables_families_and_no_return_without_reward(tmp_path):
    runs = tmp_path / "grid" / "runs"
    curve = [{"env_steps": 4096, "episodes": 2, "episode_return": 0.0, "intrinsic_return": 0.5, "metric": 1.0}]
    _write_runs(runs, extra_metrics={"reward": 1.5}, curve=curve)  # NetHack score, Crafter reward-free: 2 seeds
    files = build_leaderboard(runs, tmp_path / "board", reps=100)
    md, tex = files["markdown"].read_text(), files["latex"].read_text()
    assert md.startswith("# Leaderboard: grid\n")  # the runs folder's parent, not "runs"
    for note in ("Intervals: 2.5th-97.5th percentile", "P(X > Y): the chance", "Bold: a column's best"):
        assert md.count(note) == 1, note
    assert tex.count("Intervals: 2.5th-97.5th percentile") >= 5  # a LaTeX table stands alone in a paper
    normalisation = re.search(r"_Per-task normalisation: (.*)_", md).group(1)
    assert "crafter score" in normalisation and "nethack progression" in normalisation
    assert "housekeep" not in normalisation and "minihack" not in normalisation
    crafter = md.split("## crafter:reward-free", 1)[1].split("## ", 1)[0]
    header = next(line for line in crafter.split("\n") if line.startswith("| method"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert "return (mean ± s.e.)" not in columns and {"intrinsic return (mean ± s.e.)", "reward"} <= set(columns)
    assert "no return column" in crafter and "reward: Crafter's own reward summed over an episode" in crafter
    assert "score and the returns: over all training episodes within the budget" in crafter
    nethack = md.split("## nethack:score", 1)[1]
    assert "return (mean ± s.e.)" in nethack and "return: the task's reward summed over an episode" in nethack
    assert "Curves: each point is the mean over the episodes that ended in its bin" in md
    assert "Curves:" not in tex


def _with_curves(runs):
    for run in runs:
        run.record.curve = [CurvePoint(env_steps=s, episodes=3, episode_return=0.0, intrinsic_return=1.0 + s / 4096,
                                       metric=run.value(run.record.metric)) for s in (2048, 4096)]
    return runs


def _inside(fig) -> None:
    fig.canvas.draw()
    box = fig.bbox
    for text in [fig._suptitle, *[ax.title for ax in fig.axes]]:
        if text is not None and text.get_text():
            extent = text.get_window_extent()
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and extent.y1 <= box.y1, text.get_text()


def test_no_return_panel_without_reward_and_titles_fit_their_figure(tmp_path):
    _write_runs(tmp_path / "runs")
    runs = _with_curves(collect(tmp_path / "runs").runs)
    free = curve_figure(runs, "crafter:reward-free", "score", with_return=False)
    assert [ax.get_title() for ax in free.axes] == ["score", "intrinsic return"]
    _inside(free)
    rewarded = curve_figure(runs, "nethack:score", "progression")
    assert [ax.get_title() for ax in rewarded.axes] == ["progression", "episode return", "intrinsic return"]
    curves = {"rnd": pd.DataFrame({"threshold": [0.0, 1.0], "fraction": [1.0, 0.0], "low": [1.0, 0.0],
                                   "high": [1.0, 0.0]})}
    title = "crafter:reward-free: performance profile (bootstrap band of 3 runs in a task: not a 95% band)"
    _inside(profile_figure(curves, title, "score"))
