"""Aggregate statistics with honest uncertainty (Agarwal et al., 2021).

rliable's four aggregates of normalised scores (interquartile mean of all runs, median
and mean of the per-task mean scores, optimality gap), each with a stratified-bootstrap
interval: runs are resampled with replacement within each task (the strata), the
statistic is recomputed on each resample, and the interval is the 2.5th-97.5th
percentile. rliable itself does not work with our pins: rliable 1.2.0 requires
arch < 8, whose 7.x releases fail to import beside pandas 3, and arch 8 rejects the
``random_state=None`` that rliable passes; so this module is numpy and scipy, tested
against rliable's published formulas.

One rule for every interval (:func:`interval_name`, :func:`interval_meaning`): with fewer
than FEW_RUNS runs in some task, a resample can only repeat a handful of values, so the
percentile interval is the spread of those runs and is never called a 95% interval.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import stats as scipy_stats

BOOTSTRAP_REPS = 2000
#: fewer runs than this in a task and an interval is marked and not called a 95% interval
#: (Agarwal et al. 2021 recommend at least 5 runs for bootstrap intervals)
FEW_RUNS = 5
#: the score the optimality gap counts shortfalls from (1 = the normalisation's upper reference point)
OPTIMALITY_THRESHOLD = 1.0
#: the largest magnitude a value may have here. The standard error squares differences of values, and a
#: return of 1e300 made it overflow to "± inf"; below 1e15 every mean, square and interval stays finite (a
#: squared difference is under 4e30, float64 reaches 1.8e308) and whole numbers stay exact (2**53 is 9e15).
#: No sound final metric comes near it: budgets stop at 1e12 env steps (``number_input.MAX_STEPS``), so a
#: return of 1e15 is 1,000 reward on every step of the largest budget. The leaderboard's admission refuses
#: a record holding a value beyond it (``admission.py``); here such a value is a programming error.
MAX_MAGNITUDE = 1e15


def checked(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """``values`` as a float array, or a ValueError naming a value that is infinite or beyond
    ``MAX_MAGNITUDE``: every statistic here is finite for what passes (NaN, a missing value, passes)."""
    x = np.asarray(values, dtype=float)
    magnitudes = np.abs(x[~np.isnan(x)])
    if magnitudes.size and not magnitudes.max() <= MAX_MAGNITUDE:
        worst = x[~np.isnan(x)][np.argmax(magnitudes)]
        raise ValueError(f"statistics take values within ±{MAX_MAGNITUDE:g}, not {worst!r}")
    return x


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Mean of the middle 50% of values (25% trimmed from each end)."""
    x = checked(values)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    return float(scipy_stats.trim_mean(x, 0.25))


def mean_and_se(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the mean (nan for the error with a single value)."""
    x = checked(values)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(x.mean()), se


def optimality_gap(values: Sequence[float] | np.ndarray, gamma: float = OPTIMALITY_THRESHOLD) -> float:
    """Mean shortfall of the runs below ``gamma``: mean of max(gamma - x, 0) (lower is better)."""
    x = checked(values)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    return float(np.mean(np.maximum(gamma - x, 0.0)))


def task_means(strata: Sequence[Sequence[float]]) -> np.ndarray:
    """Each task's mean score (the unit rliable's median and mean aggregate over)."""
    return np.array([np.nanmean(checked(s)) for s in strata if len(s)])


def median_of_task_means(strata: Sequence[Sequence[float]]) -> float:
    """Median over tasks of each task's mean score (NaN without tasks)."""
    means = task_means(strata)
    return float(np.median(means)) if means.size else float("nan")


def mean_of_task_means(strata: Sequence[Sequence[float]]) -> float:
    """Mean over tasks of each task's mean score (NaN without tasks)."""
    means = task_means(strata)
    return float(np.mean(means)) if means.size else float("nan")


#: name -> statistic of the strata (one array of runs per task); the aggregates rliable reports
AGGREGATES: dict[str, Callable[[list[np.ndarray]], float]] = {
    "iqm": lambda strata: iqm(np.concatenate(strata)),
    "median": median_of_task_means,
    "mean": mean_of_task_means,
    "optimality_gap": lambda strata: optimality_gap(np.concatenate(strata)),
}


def stratified_bootstrap_intervals(
    strata: Sequence[Sequence[float]],
    statistics: dict[str, Callable[[list[np.ndarray]], float]],
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile interval of each statistic (of the list of strata) over the same resamples, which keep
    each stratum's size.

    With one value per stratum every resample is the data itself, so there is no interval:
    the answer is (nan, nan), never the degenerate [x, x].
    """
    arrays = [checked(s) for s in strata if len(s)]
    if not arrays or max(a.size for a in arrays) < 2:
        return {name: (float("nan"), float("nan")) for name in statistics}
    rng = np.random.default_rng(seed)
    values = np.empty((len(statistics), reps))
    for r in range(reps):
        sample = [a[rng.integers(0, a.size, a.size)] for a in arrays]
        for i, statistic in enumerate(statistics.values()):
            values[i, r] = statistic(sample)
    tail = (1 - confidence) / 2 * 100
    bounds = np.percentile(values, [tail, 100 - tail], axis=1)
    return {name: (float(bounds[0, i]), float(bounds[1, i])) for i, name in enumerate(statistics)}


def stratified_bootstrap_ci(
    strata: Sequence[Sequence[float]],
    statistic: Callable[[np.ndarray], float] = iqm,
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` of the pooled runs over stratified resamples."""
    return stratified_bootstrap_intervals(strata, {"s": lambda parts: statistic(np.concatenate(parts))},
                                          reps, confidence, seed)["s"]


def aggregate_estimates(strata: Sequence[Sequence[float]], reps: int = BOOTSTRAP_REPS,
                        seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """rliable's four aggregates: name -> (point, low, high), intervals from one set of resamples."""
    arrays = [checked(s) for s in strata if len(s)]
    intervals = stratified_bootstrap_intervals(arrays, AGGREGATES, reps=reps, seed=seed)
    return {name: (statistic(arrays), *intervals[name]) for name, statistic in AGGREGATES.items()}


def interval_is_ci(fewest_runs: int) -> bool:
    """Whether a bootstrap interval whose smallest stratum holds ``fewest_runs`` runs may be called a 95% CI."""
    return fewest_runs >= FEW_RUNS


def interval_name(fewest_runs: Iterable[int]) -> str:
    """A column header's name for the intervals of cells with these fewest-runs-per-task counts."""
    return "95% CI" if all(interval_is_ci(int(n)) for n in fewest_runs) else "interval"


def interval_meaning(runs: int) -> str:
    """What a bootstrap interval whose smallest task holds ``runs`` runs can and cannot say, for table notes."""
    if runs < 2:
        return "1 run in a task: no interval (a resample of one value is that value)."
    if runs == 2:
        return ("2 runs in a task: a resample can only repeat those two runs, so the interval is the range "
                "they can produce ([min, max] of the two for one task's IQM; [0, 0] or [1, 1] for P(X > Y) when "
                "the runs do not overlap); it is not a 95% interval.")
    return (f"{runs} runs in a task: a resample can only repeat those {runs} runs, so the interval covers less "
            f"than its nominal 95% (Agarwal et al. 2021 recommend at least {FEW_RUNS}); read it as the spread of "
            "these runs.")


def probability_of_improvement(x_by_task: Sequence[Sequence[float]], y_by_task: Sequence[Sequence[float]]) -> float:
    """P(X > Y) of Agarwal et al. (2021): per task the chance that a run of X beats a run of Y
    (the Mann-Whitney U statistic over all pairs, ties counting 1/2), averaged over tasks."""
    per_task = [_pairwise_win_rate(checked(x)[None], checked(y)[None])[0]
                for x, y in zip(x_by_task, y_by_task)]
    return float(np.mean(per_task)) if per_task else float("nan")


def _pairwise_win_rate(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """For each row r: mean over pairs (i, j) of 1[x_ri > y_rj] + 1/2 1[x_ri == y_rj]."""
    diff = x[:, :, None] - y[:, None, :]
    return (diff > 0).mean(axis=(1, 2)) + 0.5 * (diff == 0).mean(axis=(1, 2))


def probability_of_improvement_ci(
    x_by_task: Sequence[Sequence[float]],
    y_by_task: Sequence[Sequence[float]],
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of P(X > Y): the runs of X and of Y are resampled independently within each task."""
    xs = [checked(x) for x in x_by_task]
    ys = [checked(y) for y in y_by_task]
    if not xs or max(max(x.size, y.size) for x, y in zip(xs, ys)) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    total = np.zeros(reps)
    for x, y in zip(xs, ys):
        xr = x[rng.integers(0, x.size, (reps, x.size))]
        yr = y[rng.integers(0, y.size, (reps, y.size))]
        total += _pairwise_win_rate(xr, yr)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(total / len(xs), [tail, 100 - tail])
    return float(low), float(high)


def performance_profile(strata: Sequence[Sequence[float]], thresholds: np.ndarray) -> np.ndarray:
    """Fraction of runs whose score exceeds each threshold, per task, averaged over tasks."""
    arrays = [checked(s) for s in strata if len(s)]
    return np.mean([(a[:, None] > thresholds[None, :]).mean(axis=0) for a in arrays], axis=0)


def performance_profile_band(
    strata: Sequence[Sequence[float]],
    thresholds: np.ndarray,
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise percentile band of the profile under a stratified bootstrap (nan with one run per task)."""
    arrays = [checked(s) for s in strata if len(s)]
    if not arrays or max(a.size for a in arrays) < 2:
        empty = np.full(thresholds.shape, np.nan)
        return empty, empty
    rng = np.random.default_rng(seed)
    profiles = np.zeros((reps, thresholds.size))
    for a in arrays:
        sample = a[rng.integers(0, a.size, (reps, a.size))]
        profiles += (sample[:, :, None] > thresholds[None, None, :]).mean(axis=1)
    profiles /= len(arrays)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(profiles, [tail, 100 - tail], axis=0)
    return low, high
