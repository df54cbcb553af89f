"""A method that ran but paid no varying intrinsic reward is caught early and marked inert (issue 53).

The committed MiniHack `oni-retrieval` rows rewarded 0% of steps: the embedded oracle's threshold was never met,
so every cell trained exactly as `none` did while the table ranked it as a method.
"""

from __future__ import annotations

from llmexplore.benchmarks.run.inert import InertWatch, inert_note


def _rows(values: list[tuple[float, float]], every: int = 1000) -> list[dict]:
    return [{"env_steps": every * (i + 1), "reward_int_mean": (lo + hi) / 2, "reward_int_min": lo, "reward_int_max": hi}
            for i, (lo, hi) in enumerate(values)]


def test_a_constant_reward_is_reported_once_after_the_first_share_of_the_budget():
    watch = InertWatch.for_run("oni-retrieval", int_coef=0.4, budget=100_000)
    said = [watch.row(row["env_steps"], row) for row in _rows([(0.0, 0.0)] * 8)]
    assert said[:4] == [None] * 4  # 5% of the budget is 5,000 steps
    assert "oni-retrieval has paid the same intrinsic reward (0)" in said[4] and said[5:] == [None] * 3


def test_a_reward_that_varies_once_is_no_warning_and_no_inert_note():
    rows = _rows([(0.0, 0.0), (0.0, 0.0), (0.0, 0.4), (0.0, 0.0)])
    watch = InertWatch.for_run("oni-retrieval", int_coef=0.4, budget=2000)
    assert [watch.row(r["env_steps"], r) for r in rows][1] is not None  # constant so far: said at 2,000
    assert inert_note("oni-retrieval", 0.4, rows) is None
    assert inert_note("rnd", 0.5, _rows([(0.1, 3.2)])) is None


def test_the_record_note_names_the_constant_and_a_constant_other_than_zero_counts_too():
    note = inert_note("ellm", 1.0, _rows([(0.25, 0.25)] * 3))
    assert note["constant_reward"] == 0.25 and note["env_steps"] == 3000 and "trained as `none`" in note["why"]


def test_runs_that_claim_no_intrinsic_reward_and_older_rows_say_nothing():
    assert inert_note("none", 0.5, _rows([(0.0, 0.0)] * 3)) is None
    assert inert_note("rnd", 0.0, _rows([(0.0, 0.0)] * 3)) is None
    assert inert_note("rnd", 0.5, [{"env_steps": 1000, "reward_int_mean": 0.0}]) is None  # before the range
    watch = InertWatch.for_run("rnd", int_coef=0.5, budget=1000)
    watch.seed(_rows([(0.0, 0.0)] * 2, every=100))  # a resumed run's kept rows: nothing said again
    assert watch.row(300, _rows([(0.0, 0.0)])[0]) is None
