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
    """Percentile interval of ``statistic`` over resamples that keep each stratum's size."""
    arrays = [np.asarray(s, dtype=float) for s in strata if len(s)]
    if not arrays:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = np.empty(reps)
    for r in range(reps):
        sample = [a[rng.integers(0, a.size, a.size)] for a in arrays]
        values[r] = statistic(np.concatenate(sample))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
