"""Speed of evaluation and visualization on a trained run (a script, not a test).

    PYTHONPATH=. python tests/perf/eval_speed.py RUN_DIR [--episodes 4] [--repeats 3]

Prints medians over repeats, each against a baseline measured in the same run: the env
stepped with random actions for as many steps (what the policy's network and the
intrinsic reward add on top of the simulator).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from llmexplore.agents.policy import load_policy
from llmexplore.agents.rollout import play_episode, score_episode, seed_env, single_thread
from llmexplore.benchmarks.evaluation.run_eval import evaluate
from llmexplore.viz.visualize import visualize


def random_steps(policy, steps: int, seed: int = 0) -> float:
    """Seconds to step the run's env ``steps`` times with uniformly random actions."""
    env = policy.make_env()
    rng = np.random.default_rng(seed)
    seed_env(env, seed)
    env.reset()
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(policy.action_space.n)))
        if terminated or truncated:
            env.reset()
    seconds = time.perf_counter() - started
    env.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seeds = list(range(args.episodes))
    policy = load_policy(args.run_dir)
    env, method = policy.make_env(), policy.make_method()

    rollout, scoring, baseline, evals, viz = [], [], [], {1: [], 2: []}, {"gif": [], "mp4": []}
    for _ in range(args.repeats):
        steps, t_play, t_score = 0, 0.0, 0.0
        for seed in seeds:
            started = time.perf_counter()
            trace = play_episode(policy, env, seed, greedy=False)
            t_play += time.perf_counter() - started
            started = time.perf_counter()
            score_episode(method, policy, trace)
            t_score += time.perf_counter() - started
            steps += trace.length
        rollout.append(steps / t_play)
        scoring.append(steps / t_score)
        with single_thread():
            baseline.append(steps / random_steps(policy, steps))
        with tempfile.TemporaryDirectory() as tmp:
            for workers in evals:
                record, _ = evaluate(args.run_dir, seeds, workers=workers, out=Path(tmp) / f"e{workers}.json",
                                     progress=False)
                evals[workers].append((record.timing.episodes_per_second, record.timing.steps_per_second))
            for fmt in viz:
                started = time.perf_counter()
                visualize(args.run_dir, seeds, out=Path(tmp) / fmt, fmt=fmt, workers=1, progress=False)
                viz[fmt].append((time.perf_counter() - started) / len(seeds))

    med = statistics.median
    print(f"run {args.run_dir}: {policy.settings.run.method} on {policy.settings.run.task}, {len(seeds)} episodes, "
          f"{args.repeats} repeats, {steps / len(seeds):.0f} steps/episode (last repeat)")
    print(f"env with random actions (baseline): {med(baseline):8.0f} steps/s")
    print(f"policy rollout, one process:        {med(rollout):8.0f} steps/s  ({med(rollout) / med(baseline):.2f}x baseline)")
    print(f"intrinsic reward scoring:           {med(scoring):8.0f} steps/s")
    for workers, values in evals.items():
        eps, sps = med(v[0] for v in values), med(v[1] for v in values)
        print(f"evaluate, {workers} worker(s):               {sps:8.0f} steps/s  {eps:.2f} episodes/s "
              f"({sps / med(baseline):.2f}x baseline; includes worker start-up)")
    for fmt, values in viz.items():
        print(f"visualize ({fmt}), one process:       {med(values):8.2f} s/episode")


if __name__ == "__main__":
    main()
