"""Reward-free Crafter at a small budget: distinct achievements per episode with `ellm`, `none`, `rnd`.

    PYTHONPATH=. python tests/perf/ellm_achievements.py [--steps 100000] [--seeds 0 1] [--out DIR]

Each (method, seed) is one ordinary run (``run_cell``, records under ``--out``; rerunning
resumes or reuses complete runs). Per run: the mean number of distinct achievements
unlocked per episode, over all training episodes within the budget and over the last
half of them, and Crafter's score over the budget. ELLM uses the embedded oracle LM.
This is a sanity check of the direction, far below the published 1M-5M-step budgets.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from llmexplore.benchmarks.run.cell import run_cell
from llmexplore.benchmarks.run.spec import RunSpec
from llmexplore.envs.crafter.stats import within_budget_by_length


def achievements_per_episode(run_dir: Path, budget: int) -> tuple[float, float, int]:
    rows = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    rows = within_budget_by_length(rows, budget)
    unlocked = [r["achievements_unlocked"] for r in rows]
    late = unlocked[len(unlocked) // 2:]
    return statistics.mean(unlocked), statistics.mean(late), len(unlocked)


def mean_se(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values) / len(values) ** 0.5:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--methods", nargs="+", default=["ellm", "none", "rnd"])
    parser.add_argument("--out", default="/tmp/llmexplore-ellm-achievements")
    args = parser.parse_args()

    results: dict[str, list[tuple[int, float, float, int, float, float]]] = {}
    for seed in args.seeds:
        for method in args.methods:
            run_dir = Path(args.out) / method / f"seed{seed}"
            record = run_cell(RunSpec(method=method, task="crafter:reward-free", seed=seed, steps=args.steps),
                              run_dir, quiet=True)
            overall, late, episodes = achievements_per_episode(run_dir, args.steps)
            results.setdefault(method, []).append(
                (seed, overall, late, episodes, record.final_metrics.get("score", float("nan")),
                 record.steps_per_second or 0.0))
            print(f"{method:5s} seed {seed}: {overall:.2f} achievements/episode ({late:.2f} in the last half), "
                  f"{episodes} episodes, score {results[method][-1][4]:.2f}%, {record.steps_per_second} steps/s",
                  flush=True)

    print(f"\n# reward-free Crafter, {args.steps:,} env steps per run, seeds {args.seeds}")
    print("method | achievements/episode (all) | (last half) | Crafter score % | episodes")
    for method, rows in results.items():
        print(f"{method:6s} | {mean_se([r[1] for r in rows]):>14s} | {mean_se([r[2] for r in rows]):>12s} | "
              f"{mean_se([r[4] for r in rows]):>12s} | {sum(r[3] for r in rows)}")


if __name__ == "__main__":
    main()
