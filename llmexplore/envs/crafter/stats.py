"""Crafter's episode-stats format and its published scoring protocol.

Episode rows use Crafter's own ``stats.jsonl`` keys (``length``, ``reward`` and one
``achievement_<name>`` count per achievement), so Crafter's analysis scripts read our runs.

Protocol (Hafner 2021, "Benchmarking the Spectrum of Agent Capabilities"): within a
budget of env steps, the success rate of an achievement is the percentage of *all*
training episodes in which it was unlocked at least once; the score is the geometric mean
of (1 + rate) minus 1, over the 22 achievements. Rates and scores are computed per seed
and then averaged over seeds.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

ACHIEVEMENTS: tuple[str, ...] = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling",
    "collect_stone", "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant",
    "make_iron_pickaxe", "make_iron_sword", "make_stone_pickaxe", "make_stone_sword",
    "make_wood_pickaxe", "make_wood_sword", "place_furnace", "place_plant", "place_stone",
    "place_table", "wake_up",
)
ACHIEVEMENT_KEYS: tuple[str, ...] = tuple(f"achievement_{a}" for a in ACHIEVEMENTS)


def crafter_row(length: int, reward: float, achievements: Mapping[str, int]) -> dict:
    """One episode in Crafter's stats.jsonl format."""
    row: dict = {"length": int(length), "reward": round(float(reward), 1)}
    for name in ACHIEVEMENTS:
        row[f"achievement_{name}"] = int(achievements.get(name, 0))
    return row


def success_rates(episodes: Sequence[Mapping[str, float]]) -> np.ndarray:
    """Percent of episodes that unlocked each achievement (22 values, Crafter's order)."""
    if not episodes:
        return np.full(len(ACHIEVEMENTS), np.nan)
    counts = np.array([[float(e.get(k, 0)) for k in ACHIEVEMENT_KEYS] for e in episodes])
    return 100.0 * (counts >= 1).mean(axis=0)


def score_from_rates(rates: np.ndarray) -> float:
    """Crafter score in percent: exp(mean(ln(1 + s_i))) - 1 with s_i in percent."""
    rates = np.asarray(rates, dtype=float)
    if np.isnan(rates).all():
        return float("nan")
    if (rates < 0).any() or (rates > 100).any():
        raise ValueError("success rates must be percentages in [0, 100]")
    return float(np.exp(np.nanmean(np.log1p(rates))) - 1.0)


def episodes_within_budget(episodes: Sequence[Mapping[str, float]], budget: int | None,
                           steps_key: str = "env_steps") -> list[Mapping[str, float]]:
    """Episodes that ended within the budget; rows without a step count are kept."""
    if budget is None:
        return list(episodes)
    return [e for e in episodes if e.get(steps_key) is None or e[steps_key] <= budget]


def within_budget_by_length(episodes: Sequence[Mapping[str, float]], budget: int | None) -> list:
    """Episodes until the running sum of their lengths passes the budget (Crafter's loader)."""
    if budget is None:
        return list(episodes)
    kept, steps = [], 0
    for episode in episodes:
        steps += int(episode["length"])
        if steps > budget:
            break
        kept.append(episode)
    return kept


def run_score(episodes: Sequence[Mapping[str, float]], budget: int | None = None) -> tuple[float, np.ndarray]:
    """Score and success rates of one seed's training episodes within the budget."""
    rates = success_rates(episodes_within_budget(episodes, budget))
    return score_from_rates(rates), rates


def published_runs(runs: Iterable[Mapping], budget: int = 1_000_000) -> list[tuple[str, str, list[dict]]]:
    """Split Crafter's published per-run records (keys ``xs``, ``achievement_*`` lists) into episodes.

    ``xs`` holds the env step at the end of each episode, which we map to ``env_steps``.
    """
    out = []
    for run in runs:
        xs = list(run["xs"])
        episodes = []
        for i, x in enumerate(xs):
            row = {"env_steps": x}
            for key in ACHIEVEMENT_KEYS:
                if key in run:
                    row[key] = run[key][i]
            episodes.append(row)
        out.append((str(run.get("method", "")), str(run.get("seed", "")), episodes_within_budget(episodes, budget)))
    return out
