"""What a sub-env step costs as one process holds more envs: the cache cost of stepping K games in turn.

    PYTHONPATH=. python tests/perf/bench_env_locality.py [--task nethack:score] [--sizes 1 4 8 16 32]
        [--steps 6400] [--repeats 3]

Why: a rollout worker steps its K envs one after another, every step. NLE loads a private copy of NetHack's
shared library per game (NetHack keeps its state in globals), so K games are K copies of its code and data;
when they no longer fit the caches, each step runs from memory. The script prints, for each K, the CPU
microseconds per sub-env step of the batched path's vector env (``VectorTrainingEnv`` of the training envs
``none`` builds: adapter and training tag) under uniformly random actions, resets included, and its ratio to
K = 1 measured in the same run; then the same K games stepped round robin against each game stepping a run of
steps in a row (the same work, only the order differs), which tells the cache cost from everything else.
Sizes are interleaved and each figure is a median of ``--repeats``; CPU time of this process is measured
(``time.process_time``), so other processes on the machine move it less than wall time, though they share
the last-level cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.sf_env import build_env
from llmexplore.agents.vector_env import VectorTrainingEnv
from llmexplore.benchmarks.run.spec import RunSpec, resolve


def training_envs(task: str, count: int, run_dir: str) -> list:
    """``count`` training envs of ``none`` on ``task``, uids 0..count-1, as a rollout worker builds them."""
    resolved = resolve(RunSpec(method="none", task=task, seed=0, steps=10_000))
    settings = RunSettings(run=resolved, run_dir=run_dir, device=resolved.device)
    return [build_env(settings, uid=uid, tag_episodes=True) for uid in range(count)]


def vector_step_cost(envs: list, steps: int, seed: int) -> float:
    """CPU microseconds per sub-env step of a vector env of ``envs`` under random actions (``steps`` in all)."""
    vector = VectorTrainingEnv(envs, list(range(len(envs))))
    vector.reset()
    rounds = max(steps // len(envs), 1)
    actions = np.random.default_rng(seed).integers(0, vector.action_space.n, (rounds, len(envs)), dtype=np.int32)
    started = time.process_time()
    for row in actions:
        vector.step(row)
    return 1e6 * (time.process_time() - started) / (rounds * len(envs))


def order_cost(envs: list, steps: int, run: int, seed: int) -> float:
    """CPU microseconds per step when each env steps ``run`` steps before the next one's turn (run 1: round robin)."""
    rng = np.random.default_rng(seed)
    n = envs[0].action_space.n
    rounds = max(steps // (len(envs) * run), 1)
    started = time.process_time()
    for _ in range(rounds):
        for env in envs:
            for _ in range(run):
                _, _, terminated, truncated, _ = env.step(int(rng.integers(n)))
                if terminated or truncated:
                    env.reset()
    return 1e6 * (time.process_time() - started) / (rounds * len(envs) * run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="nethack:score")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 16, 32], help="envs per process to compare")
    parser.add_argument("--steps", type=int, default=6400, help="sub-env steps per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# {args.task}: CPU us per sub-env step, median of {args.repeats}, {args.steps:,} steps each; load "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        largest = training_envs(args.task, max(args.sizes), tmp)
        for env in largest:
            env.reset(seed=0)
        costs: dict[int, list[float]] = {size: [] for size in args.sizes}
        for repeat in range(args.repeats):
            for size in args.sizes if repeat % 2 == 0 else args.sizes[::-1]:
                costs[size].append(vector_step_cost(largest[:size], args.steps, seed=repeat))
        base = statistics.median(costs[min(args.sizes)])
        for size in args.sizes:
            cost = statistics.median(costs[size])
            print(f"  {size:3d} envs in one process: {cost:7.1f} us per step ({cost / base:4.2f}x of {min(args.sizes)}; "
                  f"runs {[round(c) for c in costs[size]]})", flush=True)
        size = max(args.sizes)
        orders: dict[int, list[float]] = {1: [], size: []}
        for repeat in range(args.repeats):
            for run in (1, size) if repeat % 2 == 0 else (size, 1):
                orders[run].append(order_cost(largest, args.steps, run, seed=repeat))
        robin, runs = statistics.median(orders[1]), statistics.median(orders[size])
        print(f"  the same {size} envs, round robin {robin:.1f} us per step, each a run of {size} steps in a row "
              f"{runs:.1f} us: round robin costs {robin / runs:.2f}x", flush=True)
        for env in largest:
            env.close()


if __name__ == "__main__":
    main()
