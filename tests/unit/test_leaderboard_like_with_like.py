"""The aggregate across tasks compares like with like (issue 53, item 5): methods are ranked over the tasks
every ranked method ran, and a method lacking one of them is listed apart with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from llmexplore.benchmarks.results.aggregate import collect, normalized
from llmexplore.benchmarks.results.cross_task import aggregate_scope, aggregate_table, choose_scope
from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from tests.unit.test_leaderboard_outputs import _write_runs

#: `none` ran two tasks, rnd and e3b only Crafter, icm only NetHack: as in results/crafter-1m
VALUES = {"none": {"crafter:reward-free": [2.0, 3.0], "nethack:score": [40.0, 60.0]},
          "rnd": {"crafter:reward-free": [4.0, 5.0]},
          "e3b": {"crafter:reward-free": [1.0, 2.0]},
          "icm": {"nethack:score": [10.0, 20.0]}}


def test_an_aggregate_over_different_task_sets_ranks_only_the_common_tasks(tmp_path):
    _write_runs(tmp_path / "runs", VALUES)
    runs = collect(tmp_path / "runs").runs
    scope = aggregate_scope(runs)
    assert scope.tasks == ("crafter:reward-free",) and scope.labels == ("e3b", "none", "rnd")
    assert scope.left_out == {"icm": "lacks crafter:reward-free"}
    assert scope.not_counted_tasks == {"none": ("nethack:score",)}

    table = aggregate_table(runs, reps=100).set_index("label")
    assert list(table.index) == ["e3b", "none", "rnd"]
    assert (table["tasks"] == 1).all() and table.loc["none", "runs"] == 2
    crafter_only = [normalized(r) for r in runs if r.label == "none" and r.task == "crafter:reward-free"]
    assert table.loc["none", "mean"] == pytest.approx(np.mean(crafter_only))

    md = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=100)["markdown"].read_text()
    aggregate = md.split("## Aggregate across tasks", 1)[1].split("## ", 1)[0]
    ranked_rows = _rows(aggregate.split("_Normalised", 1)[0])
    assert [r[:2] for r in ranked_rows] == [["e3b", "2 (1)†"], ["none", "2 (1)†"], ["rnd", "2 (1)†"]]
    assert "Not ranked: icm (lacks crafter:reward-free)" in aggregate
    assert "Not counted here: none on nethack:score" in aggregate
    # P(X > Y) across tasks compares the ranked methods on the ranked tasks only
    across = aggregate.split("Probability of improvement, all tasks.", 1)[1]
    assert [r[:3] for r in _rows(across)] == [["e3b", "none", "2 / 2"], ["e3b", "rnd", "2 / 2"],
                                              ["none", "rnd", "2 / 2"]]


def _rows(markdown: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``markdown``, as cells."""
    lines = [line for line in markdown.split("\n") if line.startswith("|")]
    table = lines[2:]
    return [[c.strip() for c in row.strip("|").split("|")] for row in table if row.strip()]


def test_the_scope_is_the_shared_task_set_with_the_most_cells():
    # three methods share tasks a and b; each has one more of its own
    scope = choose_scope({"x": frozenset("abc"), "y": frozenset("abd"), "z": frozenset("abe")})
    assert scope.tasks == ("a", "b") and scope.labels == ("x", "y", "z") and not scope.left_out
    assert scope.not_counted_tasks == {"x": ("c",), "y": ("d",), "z": ("e",)}
    # one method on one task more is not worth dropping three tasks of two methods
    scope = choose_scope({"x": frozenset("abc"), "y": frozenset("abc"), "z": frozenset("a")})
    assert scope.tasks == ("a", "b", "c") and scope.left_out == {"z": "lacks b, c"}
    assert choose_scope({}).tasks == ()
