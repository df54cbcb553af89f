"""Crafter's reference scores, derived by our scoring code from Crafter's published episode stats.

The leaderboard needs only summary figures (the random agent's and human experts' score and
per-achievement success rates), so those ship with the package as
``llmexplore/data/packaged/crafter/reference_scores.json``; the 2.6 MB per-episode file they
come from is the fetchable ``crafter`` dataset. Regenerate the table after fetching it with
``python -m llmexplore.envs.crafter.reference``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from llmexplore.envs.crafter.stats import ACHIEVEMENTS, published_runs, run_score

REFERENCE_FILE = "crafter/reference_scores.json"
#: published file -> (row name, env-step budget as the scoreboard: the random agent's 1M, all human episodes)
PUBLISHED = {
    "crafter_noreward-random.json": ("random", 1_000_000),
    "crafter_reward-human.json": ("human", None),
}


def derive(folder: Path) -> dict[str, Any]:
    """Score and success rates per agent: computed per seed, then mean and standard deviation over seeds."""
    from llmexplore.data.catalog import dataset

    info = dataset("crafter")
    table: dict[str, Any] = {
        "source": f"derived by llmexplore.envs.crafter.reference from the scores/ files of {info.source}",
        "licence": "MIT, Copyright (c) 2021 Danijar Hafner (see LICENSE beside this file)",
        "protocol": "Crafter's: success rate = percent of episodes within the budget that unlock an "
                    "achievement; score = exp(mean(ln(1 + rate))) - 1; per seed, then mean and std "
                    "over seeds",
        "agents": {},
    }
    for name, (agent, budget) in PUBLISHED.items():
        runs = json.loads((folder / name).read_text())
        per_seed = [run_score(episodes) for _, _, episodes in published_runs(runs, budget=budget)]
        scores = np.array([score for score, _ in per_seed])
        rates = np.array([r for _, r in per_seed])
        table["agents"][agent] = {
            "file": name, "task": str(runs[0].get("task", "")), "budget": budget, "seeds": len(per_seed),
            "score_mean": round(float(scores.mean()), 3), "score_std": round(float(scores.std()), 3),
            "success_rates": {a: round(float(v), 3) for a, v in zip(ACHIEVEMENTS, rates.mean(axis=0))},
        }
    return table


@lru_cache(maxsize=1)
def reference_scores() -> dict[str, Any]:
    """The shipped table (see the module docstring)."""
    from llmexplore.settings import packaged_path

    return json.loads(packaged_path(REFERENCE_FILE).read_text())


def main() -> None:
    """Recompute the shipped reference table from the fetched ``crafter`` dataset; print where it went."""
    from llmexplore.atomic import atomic_write_json
    from llmexplore.settings import data_path, packaged_path

    atomic_write_json(packaged_path(REFERENCE_FILE), derive(data_path("crafter")))
    print(packaged_path(REFERENCE_FILE))


if __name__ == "__main__":
    main()
