"""How many seeds per arm the NetHack 1M grid would need: rough planning figures from its committed records.

Two seeds per arm cannot separate the methods (README, "Results"); this script says how many seeds a
difference of the observed size would need, metric by metric, so the next grid can be sized. Every
number it prints rests on between-seed standard deviations estimated from two seeds per arm, which are
very uncertain (the 95% interval of a 2-degree-of-freedom s.d. spans 0.52x to 6.3x the estimate, and the
seeds needed scale with its square): planning figures, not findings.

Seeds per arm use the normal approximation for a two-sided two-sample test of equal variances,
n = 2 (z_{1-alpha/2} + z_{power})^2 / d^2 with d = (difference of arm means) / (pooled s.d.).

    python results/nethack-1m/power.py                   # the committed records
    python results/nethack-1m/power.py --records DIR     # records/<label>/<task>/seed<N>/run.json
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Sequence

import numpy as np
from scipy import stats as scipy_stats

from llmexplore.benchmarks.run.record import RunRecord, read_record
from llmexplore.errors import DataError

RECORDS = Path(__file__).resolve().parent / "records"
ALPHA = 0.05
POWER = 0.80
BASELINE = "none"
#: the final_metrics compared, in the README's order (`return` is the Score task's env return, which the
#: curve also bins, so it is the one metric both views below can show beside progression)
METRICS = ("progression", "score", "depth", "experience_level", "gold", "kills", "return")
#: the curve's field for a metric, where the curve bins it (the curve keeps no other per-episode means)
CURVE_FIELDS = {"progression": "metric", "return": "episode_return"}
#: the episodes behind each final_metrics value (the record's final window)
WINDOW_EPISODES = 100
#: curve bins ending after this share of the budget estimate the per-episode s.d. (the second half,
#: where the curves are flattest; a remaining trend only inflates the estimate)
LATE_SHARE = 0.5


def seeds_per_arm(effect_size: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Units per arm a two-sided two-sample test at ``alpha`` with ``power`` needs to detect a
    standardised difference ``effect_size`` (normal approximation; unrounded, inf for no difference)."""
    for name, value in (("alpha", alpha), ("power", power)):
        if not (math.isfinite(value) and 0 < value < 1):
            raise ValueError(f"{name} must be a finite number strictly between 0 and 1, not {value!r}")
    if not math.isfinite(effect_size):
        raise ValueError(f"the effect size must be finite, not {effect_size!r}")
    if effect_size == 0:
        return math.inf
    z = NormalDist().inv_cdf
    return 2 * (z(1 - alpha / 2) + z(power)) ** 2 / effect_size**2


def t_test_seeds_per_arm(effect_size: float, alpha: float = ALPHA, power: float = POWER,
                         most: int = 100_000) -> int:
    """The smallest seeds per arm at which a two-sided two-sample t-test has ``power`` (noncentral t):
    the normal approximation's figure is 1-2 seeds short where it is below about 10."""
    approximate = seeds_per_arm(effect_size, alpha, power)
    if approximate > most:
        raise ValueError(f"more than {most:,} per arm (effect size {effect_size!r})")
    n = max(2, math.ceil(approximate))
    while n <= most:
        dof, shift = 2 * n - 2, abs(effect_size) * math.sqrt(n / 2)
        critical = scipy_stats.t.ppf(1 - alpha / 2, dof)
        if scipy_stats.nct.sf(critical, dof, shift) + scipy_stats.nct.cdf(-critical, dof, shift) >= power:
            return n
        n += 1
    raise ValueError(f"more than {most:,} per arm (effect size {effect_size!r})")


def pooled_sd(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """The pooled within-group s.d. and its degrees of freedom (sum of n_i - 1): one spread shared by
    every group, the two-sample test's assumption."""
    squares, dof = 0.0, 0
    for values in groups:
        x = np.asarray(values, dtype=float)
        if x.size < 2 or not np.all(np.isfinite(x)):
            raise ValueError(f"each group needs at least two finite values, not {list(values)!r}")
        squares += float(((x - x.mean()) ** 2).sum())
        dof += x.size - 1
    if not groups:
        raise ValueError("pooled_sd needs at least one group")
    return math.sqrt(squares / dof), dof


def sd_interval(sd: float, dof: int, level: float = 0.95) -> tuple[float, float]:
    """The chi-square interval of a normal s.d. estimated with ``dof`` degrees of freedom: how far the
    true spread may be from the estimate."""
    tail = (1 - level) / 2
    return (sd * math.sqrt(dof / scipy_stats.chi2.ppf(1 - tail, dof)),
            sd * math.sqrt(dof / scipy_stats.chi2.ppf(tail, dof)))


def per_episode_sd(bins: Sequence[tuple[int, float]]) -> tuple[float, int]:
    """The s.d. of single episodes from bin means: with n_i episodes of spread sigma in bin i, the
    between-bin mean square sum n_i (m_i - m)^2 / (k - 1) estimates sigma^2 when the policy does not
    change between the bins; a trend adds to it, so this is an upper estimate. ``bins``: (episodes, mean)."""
    used = [(n, m) for n, m in bins if n > 0 and m is not None and math.isfinite(m)]
    if len(used) < 2:
        raise ValueError("per_episode_sd needs at least two bins with episodes")
    counts = np.array([n for n, _ in used], dtype=float)
    means = np.array([m for _, m in used], dtype=float)
    grand = float((counts * means).sum() / counts.sum())
    return math.sqrt(float((counts * (means - grand) ** 2).sum()) / (len(used) - 1)), len(used) - 1


# -- the records -----------------------------------------------------------------------------------------
@dataclass
class Grid:
    """The records of one task, arm by arm (label -> seed -> record)."""

    task: str
    arms: dict[str, dict[int, RunRecord]]

    def values(self, label: str, metric: str) -> list[float]:
        """The metric's final-window value of each seed of an arm, in seed order."""
        return [self.arms[label][seed].final_metrics[metric] for seed in sorted(self.arms[label])]


def load_grid(root: Path) -> Grid:
    """Every complete record under ``root``: one task, two seeds or more per arm, the baseline among them."""
    if not root.is_dir():
        raise DataError(f"{root} is not a folder", hint="pass --records the folder of the grid's records")
    try:
        paths = sorted(root.glob("*/*/seed*/run.json"))
    except OSError as exc:
        raise DataError(f"cannot list the records under {root}: {exc}") from None
    if not paths:
        raise DataError(f"no run records under {root}",
                        hint="pass --records the folder of <label>/<task>/seed<N>/run.json")
    arms: dict[str, dict[int, RunRecord]] = {}
    tasks = set()
    for path in paths:
        record = read_record(path)
        if record.status != "complete":
            raise DataError(f"{path} is {record.status}, not complete", hint="copy only complete records")
        missing = [m for m in METRICS if m not in record.final_metrics]
        if missing:
            raise DataError(f"{path} has no final {', '.join(missing)}: not a NetHack record")
        tasks.add(record.spec.task)
        arms.setdefault(record.spec.row_label, {})[record.spec.seed] = record
    if len(tasks) != 1:
        raise DataError(f"records of several tasks under {root}: {sorted(tasks)}",
                        hint="point --records at one grid")
    thin = sorted(label for label, seeds in arms.items() if len(seeds) < 2)
    if thin or BASELINE not in arms:
        raise DataError(f"every arm needs two seeds or more and {BASELINE!r} must be one; "
                        f"short: {thin or 'none'}, arms: {sorted(arms)}")
    return Grid(tasks.pop(), arms)


def late_bins(record: RunRecord, metric: str) -> list[tuple[int, float]]:
    """(episodes, mean) of the curve's bins in the budget's second half, for a metric the curve bins."""
    field = CURVE_FIELDS[metric]
    start = LATE_SHARE * record.budget
    return [(p.episodes, getattr(p, field)) for p in record.curve if p.env_steps > start]


# -- the tables ------------------------------------------------------------------------------------------
def _show(x: float) -> str:
    """A number to about three significant figures; seeds and episodes as whole numbers above 100."""
    if math.isinf(x):
        return "inf"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _needed(effect_size: float) -> str:
    """Seeds (or episodes) per arm, rounded up."""
    n = seeds_per_arm(effect_size)
    return "inf" if math.isinf(n) else f"{math.ceil(n):,}"


def seed_rows(grid: Grid) -> list[list[str]]:
    """Per metric and method: the difference from the baseline, the pair's and the grid's pooled s.d.,
    the standardised effects and the seeds per arm each s.d. gives."""
    rows = []
    for metric in METRICS:
        grid_sd, _ = pooled_sd([grid.values(label, metric) for label in grid.arms])
        base = grid.values(BASELINE, metric)
        for label in sorted(grid.arms):
            if label == BASELINE:
                continue
            other = grid.values(label, metric)
            diff = float(np.mean(other) - np.mean(base))
            pair_sd, pair_dof = pooled_sd([base, other])
            rows.append([metric, label, _show(float(np.mean(base))), _show(float(np.mean(other))),
                         _show(diff), f"{_show(pair_sd)} ({pair_dof} df)", _show(diff / pair_sd),
                         _needed(diff / pair_sd), _show(diff / grid_sd), _needed(diff / grid_sd)])
    return rows


def resolution_rows(grid: Grid) -> list[list[str]]:
    """Per metric: how far the arms' means spread against what seed-to-seed spread alone would give.

    The ratio sd(arm means) / (s / sqrt(seeds)) is near 1 when no method changes the metric; its square
    is the one-way analysis of variance's F, shown with its p-value (an omnibus test, not a finding)."""
    rows = []
    for metric in METRICS:
        groups = [grid.values(label, metric) for label in sorted(grid.arms)]
        sd, dof = pooled_sd(groups)
        low, high = sd_interval(sd, dof)
        means = np.array([np.mean(g) for g in groups])
        seeds = np.mean([len(g) for g in groups])
        ratio = float(means.std(ddof=1) / (sd / math.sqrt(seeds)))
        f_value, p_value = scipy_stats.f_oneway(*groups)
        base = float(np.mean(grid.values(BASELINE, metric)))
        effects = [abs(m - base) / sd for m, label in zip(means, sorted(grid.arms)) if label != BASELINE]
        median_effect = float(np.median(effects))
        rows.append([metric, f"{_show(sd)} ({dof} df; {_show(low)}-{_show(high)})",
                     _show(float(means.std(ddof=1))), _show(ratio), f"{f_value:.2f} (p {p_value:.2f})",
                     _show(median_effect), _needed(median_effect), str(t_test_seeds_per_arm(median_effect))])
    return rows


def pooled_episode_sd(grid: Grid, metric: str) -> tuple[float, int]:
    """The per-episode s.d. of a metric the curve bins, pooled over every run's late bins (an upper
    estimate: see :func:`per_episode_sd`), and its degrees of freedom."""
    squares, dof = 0.0, 0
    for seeds in grid.arms.values():
        for record in seeds.values():
            sd, bins_dof = per_episode_sd(late_bins(record, metric))
            squares, dof = squares + sd**2 * bins_dof, dof + bins_dof
    return math.sqrt(squares / dof), dof


def episode_noise_rows(grid: Grid) -> list[list[str]]:
    """For the metrics the curve bins: the per-episode s.d., the noise it puts in a 100-episode mean and
    the share of the seed-to-seed variance that noise accounts for (the rest is the seeds' own spread)."""
    rows = []
    for metric in CURVE_FIELDS:
        episode_sd, dof = pooled_episode_sd(grid, metric)
        window_se = episode_sd / math.sqrt(WINDOW_EPISODES)
        seed_sd, _ = pooled_sd([grid.values(label, metric) for label in grid.arms])
        rows.append([metric, f"{_show(episode_sd)} ({dof} df)", _show(window_se), _show(seed_sd),
                     f"{min(window_se**2 / seed_sd**2, 1.0):.0%}"])
    return rows


def episode_count_rows(grid: Grid) -> list[list[str]]:
    """Per method: the episodes per arm the difference from the baseline would need if episodes were
    independent units (they are not: episodes of one run share its policy), beside the seeds it needs."""
    rows = []
    for metric in CURVE_FIELDS:
        episode_sd, _ = pooled_episode_sd(grid, metric)
        seed_sd, _ = pooled_sd([grid.values(label, metric) for label in grid.arms])
        base = float(np.mean(grid.values(BASELINE, metric)))
        for label in sorted(grid.arms):
            if label == BASELINE:
                continue
            diff = float(np.mean(grid.values(label, metric))) - base
            rows.append([metric, label, _show(diff), _needed(diff / episode_sd), _needed(diff / seed_sd)])
    return rows


def markdown(header: Sequence[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


SEED_HEADER = ("metric", "method", f"{BASELINE} mean", "method mean", "difference", "pair s.d.", "d (pair)",
               "seeds/arm (pair s.d.)", "d (grid s.d.)", "seeds/arm (grid s.d.)")
RESOLUTION_HEADER = ("metric", "seed s.d., grid-pooled (df; 95% interval)", "s.d. of arm means",
                     "spread ratio", "F (p)", "median |d| vs none", "seeds/arm at median |d|",
                     "the same, exact t-test")
EPISODE_NOISE_HEADER = ("metric", "per-episode s.d. (df)", "s.e. of a 100-episode mean", "seed s.d. (grid)",
                        "share of seed variance from episode noise")
EPISODE_COUNT_HEADER = ("metric", "method", "difference", "episodes/arm if independent",
                        "seeds/arm (grid s.d.)")


def report(grid: Grid) -> str:
    """The four tables, each under a line saying what it is."""
    arms = ", ".join(f"{label} ({len(seeds)} seeds)" for label, seeds in sorted(grid.arms.items()))
    return "\n\n".join([
        f"Task {grid.task}; arms {arms}; two-sided alpha {ALPHA}, power {POWER:.0%}, "
        "n = 2 (z_(1-alpha/2) + z_power)^2 / d^2, rounded up.",
        "Seeds per arm, each method against none:", markdown(SEED_HEADER, seed_rows(grid)),
        "Which metric resolves more (arm means against seed-to-seed spread):",
        markdown(RESOLUTION_HEADER, resolution_rows(grid)),
        "Episodes rather than seeds (only the metrics the curve bins), the noise in one run's final window:",
        markdown(EPISODE_NOISE_HEADER, episode_noise_rows(grid)),
        "and what treating episodes as independent units would claim:",
        markdown(EPISODE_COUNT_HEADER, episode_count_rows(grid)),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, default=RECORDS,
                        help="folder of <label>/<task>/seed<N>/run.json (default: the committed records)")
    args = parser.parse_args(argv)
    try:
        print(report(load_grid(args.records)))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
