"""Aggregate statistics with honest uncertainty (Agarwal et al., 2021).

Interquartile mean (IQM) over runs, with 95% confidence intervals from a stratified
bootstrap: runs are resampled with replacement within each task (the strata), the
statistic is recomputed on each resample, and the interval is the 2.5th-97.5th
percentile. rliable implements the same procedure; its bootstrap module depends on
``arch``, which does not import beside pandas 3 here, so we use numpy and scipy.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy import stats as scipy_stats

BOOTSTRAP_REPS = 2000


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Mean of the middle 50% of values (25% trimmed from each end)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    return float(scipy_stats.trim_mean(x, 0.25))


def mean_and_se(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the mean (nan for the error with a single value)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(x.mean()), se


def stratified_bootstrap_ci(
    strata: Sequence[Sequence[float]],
    statistic: Callable[[np.ndarray], float] = iqm,
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over resamples that keep each stratum's size.

    With one value per stratum every resample is the data itself, so there is no interval:
    the answer is (nan, nan), never the degenerate [x, x].
    """
    arrays = [np.asarray(s, dtype=float) for s in strata if len(s)]
    if not arrays or max(a.size for a in arrays) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = np.empty(reps)
    for r in range(reps):
        sample = [a[rng.integers(0, a.size, a.size)] for a in arrays]
        values[r] = statistic(np.concatenate(sample))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def interval_meaning(seeds: int) -> str:
    """What a bootstrap interval from ``seeds`` runs can and cannot say, for table notes."""
    if seeds < 2:
        return "1 seed: no interval (a resample of one value is that value)."
    if seeds == 2:
        return ("2 seeds: a resample holds only the two values, so the IQM interval is [min, max] of the "
                "two runs; it is not a 95% interval.")
    return (f"{seeds} seeds: resamples can hold only the {seeds} observed values, so the interval "
            "covers less than its nominal 95% (Agarwal et al. 2021 suggest at least 5 seeds); read it as "
            "the spread of these runs.")


def probability_of_improvement(x_by_task: Sequence[Sequence[float]], y_by_task: Sequence[Sequence[float]]) -> float:
    """P(X > Y) of Agarwal et al. (2021): per task the chance that a run of X beats a run of Y
    (the Mann-Whitney U statistic over all pairs, ties counting 1/2), averaged over tasks."""
    per_task = [_pairwise_win_rate(np.asarray(x, dtype=float)[None], np.asarray(y, dtype=float)[None])[0]
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
    xs = [np.asarray(x, dtype=float) for x in x_by_task]
    ys = [np.asarray(y, dtype=float) for y in y_by_task]
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
    arrays = [np.asarray(s, dtype=float) for s in strata if len(s)]
    return np.mean([(a[:, None] > thresholds[None, :]).mean(axis=0) for a in arrays], axis=0)


def performance_profile_band(
    strata: Sequence[Sequence[float]],
    thresholds: np.ndarray,
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise percentile band of the profile under a stratified bootstrap (nan with one run per task)."""
    arrays = [np.asarray(s, dtype=float) for s in strata if len(s)]
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
