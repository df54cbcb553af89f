"""The metrics cadence is a function of env steps alone: rows at the first batch past each multiple
of the cadence, one at the budget, none for batches trained past it, and the same rows after a resume."""

from __future__ import annotations

import pytest

from llmexplore.agents.metrics_schedule import MetricsSchedule, default_metrics_every


def rows(schedule: MetricsSchedule, batch: int, until: int, start: int = 0) -> list[int]:
    return [steps for steps in range(start + batch, until + 1, batch) if schedule.due(steps)]


def test_a_row_at_each_crossed_multiple_and_at_the_budget():
    assert rows(MetricsSchedule(every=1000, budget=4096), batch=1024, until=4096) == [1024, 2048, 3072, 4096]
    assert rows(MetricsSchedule(every=3000, budget=10240), batch=1024, until=10240) == [3072, 6144, 9216, 10240]


def test_batches_past_the_budget_get_no_rows():
    schedule = MetricsSchedule(every=1024, budget=2048)
    assert rows(schedule, batch=1024, until=6144) == [1024, 2048]


def test_a_cadence_finer_than_a_batch_gives_one_row_per_batch():
    assert rows(MetricsSchedule(every=10, budget=3072), batch=1024, until=3072) == [1024, 2048, 3072]


def test_a_resumed_run_continues_the_same_rows():
    whole = rows(MetricsSchedule(every=2500, budget=20480), batch=1024, until=20480)
    resumed = MetricsSchedule(every=2500, budget=20480)
    resumed.restart_from(8192)
    first = [s for s in whole if s <= 8192]
    assert first + rows(resumed, batch=1024, until=20480, start=8192) == whole


def test_a_run_resumed_at_its_budget_writes_no_second_final_row():
    schedule = MetricsSchedule(every=1024, budget=4096)
    schedule.restart_from(4096)
    assert schedule.final_written and not schedule.due(5120)


def test_default_cadence_gives_about_a_hundred_rows_for_any_budget():
    assert default_metrics_every(10_000) == 100
    assert default_metrics_every(1_000_000_000) == 10_000_000
    assert default_metrics_every(50) == 1


def test_a_cadence_below_one_step_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        MetricsSchedule(every=0, budget=100)
