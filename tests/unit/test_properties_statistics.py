"""Properties of the leaderboard's statistics (``benchmarks/results/statistics.py``) over generated runs: every
value a record may hold (finite, within ``MAX_MAGNITUDE``) gives finite statistics; the estimates do not depend
on the order of the runs and follow a change of units (shift and scale); intervals are ordered and hold their
point estimate. Derandomized and bounded, so they run in seconds and the same way every time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmexplore.benchmarks.results.statistics import (
    MAX_MAGNITUDE, aggregate_estimates, checked, iqm, mean_and_se, optimality_gap, performance_profile,
    probability_of_improvement, probability_of_improvement_ci, stratified_bootstrap_ci)

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=150)
SLOW_PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=30)
REPS = 100  # bootstrap resamples: enough for the invariants, fast enough for many examples

#: any value a record may hold
admitted = st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE, allow_nan=False, allow_infinity=False)
#: values on a scale where a change of units stays well inside the admitted range
moderate = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
runs = st.lists(admitted, min_size=1, max_size=30)
strata = st.lists(st.lists(admitted, min_size=1, max_size=8), min_size=1, max_size=5)


def close(a: float, b: float, scale: float) -> bool:
    """Equal up to float rounding of numbers of size ``scale``."""
    return abs(a - b) <= 1e-9 * scale + 1e-12


def spread(values) -> float:
    return float(np.max(np.abs(np.asarray(values, dtype=float)))) if len(values) else 0.0


@PROPERTY
@given(runs)
def test_point_estimates_are_finite_and_within_the_runs(values):
    mean, se = mean_and_se(values)
    middle = iqm(values)
    low, high = min(values), max(values)
    for estimate in (mean, middle):
        assert math.isfinite(estimate)
        assert low - 1e-9 * spread(values) <= estimate <= high + 1e-9 * spread(values)
    assert (math.isnan(se) if len(values) == 1 else math.isfinite(se) and se >= 0)
    assert math.isfinite(optimality_gap(values)) and optimality_gap(values) >= 0


@PROPERTY
@given(runs, st.randoms(use_true_random=False))
def test_point_estimates_do_not_depend_on_the_order_of_the_runs(values, random):
    shuffled = list(values)
    random.shuffle(shuffled)
    scale = spread(values)
    assert close(mean_and_se(values)[0], mean_and_se(shuffled)[0], scale)
    assert close(iqm(values), iqm(shuffled), scale)
    if len(values) > 1:
        assert close(mean_and_se(values)[1], mean_and_se(shuffled)[1], scale)


@PROPERTY
@given(st.lists(moderate, min_size=2, max_size=30), st.floats(-100, 100).filter(lambda a: abs(a) > 1e-3),
       moderate)
def test_point_estimates_follow_a_change_of_units(values, scale, shift):
    moved = [scale * v + shift for v in values]
    size = abs(scale) * spread(values) + abs(shift)
    mean, se = mean_and_se(values)
    assert close(mean_and_se(moved)[0], scale * mean + shift, size)
    assert close(mean_and_se(moved)[1], abs(scale) * se, size)
    assert close(iqm(moved), scale * iqm(values) + shift, size)


@SLOW_PROPERTY
@given(strata)
def test_aggregate_intervals_are_finite_ordered_and_hold_their_estimate(parts):
    estimates = aggregate_estimates(parts, reps=REPS)
    several = max(len(p) for p in parts) > 1
    for name, (point, low, high) in estimates.items():
        assert math.isfinite(point), name
        if not several:
            assert math.isnan(low) and math.isnan(high)
            continue
        tolerance = 1e-9 * max(spread(p) for p in parts)
        assert math.isfinite(low) and math.isfinite(high), name
        assert low - tolerance <= point <= high + tolerance, (name, low, point, high)


@SLOW_PROPERTY
@given(st.lists(moderate, min_size=2, max_size=20), st.floats(0.01, 100), moderate)
def test_a_bootstrap_interval_follows_a_change_of_units(values, scale, shift):
    low, high = stratified_bootstrap_ci([values], iqm, reps=REPS)
    moved_low, moved_high = stratified_bootstrap_ci([[scale * v + shift for v in values]], iqm, reps=REPS)
    size = scale * spread(values) + abs(shift)
    assert close(moved_low, scale * low + shift, size) and close(moved_high, scale * high + shift, size)
    assert low <= iqm(values) + 1e-9 * spread(values) and iqm(values) <= high + 1e-9 * spread(values)


@SLOW_PROPERTY
@given(st.lists(st.tuples(st.lists(admitted, min_size=1, max_size=6), st.lists(admitted, min_size=1, max_size=6)),
                min_size=1, max_size=4))
def test_probability_of_improvement_is_a_probability_and_symmetric(pairs):
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    forward, backward = probability_of_improvement(xs, ys), probability_of_improvement(ys, xs)
    assert 0 <= forward <= 1 and close(forward + backward, 1.0, 1.0)
    low, high = probability_of_improvement_ci(xs, ys, reps=REPS)
    if not math.isnan(low):
        assert 0 <= low <= forward + 1e-12 and forward - 1e-12 <= high <= 1


@PROPERTY
@given(strata, st.lists(moderate, min_size=1, max_size=10, unique=True))
def test_a_performance_profile_is_a_falling_fraction(parts, thresholds):
    profile = performance_profile(parts, np.sort(np.asarray(thresholds)))
    assert np.all((profile >= 0) & (profile <= 1)) and np.all(np.diff(profile) <= 1e-12)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, 1e300, -MAX_MAGNITUDE * 2])
def test_a_value_a_record_may_not_hold_is_refused_not_computed(bad):
    for statistic in (iqm, mean_and_se, optimality_gap, lambda v: stratified_bootstrap_ci([v], reps=10)):
        with pytest.raises(ValueError, match="within"):
            statistic([1.0, 2.0, bad])
    assert np.isnan(checked([1.0, math.nan])[1])  # a missing value passes; the statistics leave it out
