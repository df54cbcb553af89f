"""Learning curves with confidence bands, performance profiles and Crafter achievement bars. Each plot is a
figure first (``*_figure``, which tests inspect) and then a file; titles wrap to the figure's width."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from llmexplore.benchmarks.results.aggregate import Run, learning_curves  # noqa: E402
from llmexplore.benchmarks.results.statistics import interval_is_ci  # noqa: E402

#: a title's characters per inch of figure width at font size 10, taking 0.6 em a character (a little wider
#: than DejaVu Sans's average), so a wrapped line fits
CHARACTERS_PER_INCH_AT_10PT = 72 / (10 * 0.6)


def wrapped(text: str, width_inches: float, fontsize: float = 10) -> str:
    """``text`` broken into lines that fit ``width_inches`` at ``fontsize``, so a long title is never clipped."""
    return textwrap.fill(text, max(20, int(width_inches * CHARACTERS_PER_INCH_AT_10PT * 10 / fontsize)))


def _saved(fig: Figure | None, path: Path) -> Path | None:
    if fig is None:
        return None
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_curves(runs: list[Run], task: str, metric: str, path: Path, with_return: bool = True) -> Path | None:
    """``curve_figure`` as a PNG at ``path``; None when no run has a curve."""
    return _saved(curve_figure(runs, task, metric, with_return), path)


def plot_achievements(table: pd.DataFrame, task: str, path: Path) -> Path | None:
    """``achievement_figure`` as a PNG at ``path``; None when the task has no achievements."""
    return _saved(achievement_figure(table, task), path)


def plot_profiles(curves: dict[str, pd.DataFrame], title: str, xlabel: str, path: Path) -> Path | None:
    """``profile_figure`` as a PNG at ``path``; None without curves."""
    return _saved(profile_figure(curves, title, xlabel), path)


def curve_figure(runs: list[Run], task: str, metric: str, with_return: bool = True) -> Figure | None:
    """A task's learning curves (metric, episode return, intrinsic return) per label; None when no run
    has a curve. ``with_return=False`` (a reward-free task: the return is zero by design) leaves the episode
    return out."""
    panels = [("metric", metric), ("episode_return", "episode return"), ("intrinsic_return", "intrinsic return")]
    panels = [p for p in panels if with_return or p[0] != "episode_return"]
    data = [(title, learning_curves(runs, task, key)) for key, title in panels]
    data = [(title, curves) for title, curves in data if any(len(df) for df in curves.values())]
    if not data:
        return None
    fig, axes = plt.subplots(1, len(data), figsize=(5 * len(data), 3.6), squeeze=False)
    for ax, (title, curves) in zip(axes[0], data):
        for label, df in curves.items():
            if df.empty:
                continue
            line, = ax.plot(df["env_steps"], df["mean"], label=label)
            ax.fill_between(df["env_steps"], df["low"], df["high"], color=line.get_color(), alpha=0.2)
        ax.set_xlabel("env steps")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    seeds = min((len({r.seed for r in runs if r.task == task and r.label == label}) for label in
                 {r.label for r in runs if r.task == task}), default=0)
    band = ("95% bootstrap band" if interval_is_ci(seeds) else
            f"bootstrap band of {seeds} seed{'s' if seeds != 1 else ''}: not a 95% band")
    fig.suptitle(wrapped(f"{task}: mean over seeds, {band}; each point: the episodes that ended in its bin "
                         "of env steps", fig.get_figwidth()), fontsize=10)
    fig.tight_layout()
    return fig


def achievement_figure(table: pd.DataFrame, task: str) -> Figure | None:
    """A task's achievement success rates per label; None when the task has none."""
    if table.empty:  # no Crafter runs: the table has no columns at all
        return None
    rows = table[table["task"] == task]
    if rows.empty:
        return None
    names = [c for c in rows.columns if c not in ("task", "label", "seeds")]
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.8 / len(rows)
    x = np.arange(len(names))
    for i, (_, row) in enumerate(rows.iterrows()):
        values = [max(row[n], 0.01) for n in names]  # log scale: show zero as the floor
        ax.bar(x + i * width, values, width, label=row["label"])
    ax.set_yscale("log")
    ax.set_ylim(0.01, 100)
    ax.set_ylabel("success rate (%)")
    ax.set_xticks(x + width * (len(rows) - 1) / 2)
    ax.set_xticklabels([n.replace("_", " ") for n in names], rotation=60, ha="right", fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title(wrapped(f"{task}: achievement success rates (% of training episodes)", fig.get_figwidth(), 12))
    fig.tight_layout()
    return fig


def profile_figure(curves: dict[str, pd.DataFrame], title: str, xlabel: str) -> Figure | None:
    """Performance profiles: fraction of runs above each threshold, with the bootstrap band where there is one."""
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, df in curves.items():
        line, = ax.plot(df["threshold"], df["fraction"], label=label)
        if df["low"].notna().all():
            ax.fill_between(df["threshold"], df["low"], df["high"], color=line.get_color(), alpha=0.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of runs with score > threshold")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(wrapped(title, fig.get_figwidth()), fontsize=10)
    fig.tight_layout()
    return fig
