"""Housekeep env speed: median env steps/s of a uniform-random policy (resets included).

Baseline measured in the same run: the episode rules alone (``Rearrangement.step`` on the
same action stream, no observations, stats or gymnasium API), so the ratio shows what the
env's observation building and bookkeeping cost. Run from the repository root:

    PYTHONPATH=$PWD python tests/perf/bench_housekeep.py [--task housekeep:pomaria_0] [--steps 20000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from llmexplore.envs import make_adapter
from llmexplore.envs.housekeep.world import NUM_ACTIONS, Rearrangement


def env_rate(adapter, actions: np.ndarray, seed: int) -> float:
    env = adapter.make_env(seed=seed)
    env.reset()
    start = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    return len(actions) / (time.perf_counter() - start)


def rules_rate(adapter, actions: np.ndarray, seed: int, max_steps: int) -> float:
    env = adapter.make_env(seed=seed)
    env.reset()
    layout = env.world.layout
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    world, t = Rearrangement(layout, layout.correct, rng.permutation(layout.num_objects), layout.start_room), 0
    for a in actions:
        world.step(int(a))
        t += 1
        if t >= max_steps or world.solved():
            world, t = Rearrangement(layout, layout.correct, rng.permutation(layout.num_objects), layout.start_room), 0
    return len(actions) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="housekeep:pomaria_0")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    adapter = make_adapter(args.task)
    t0 = time.perf_counter()
    adapter.validate_data()
    print(f"{args.task}: data loaded in {time.perf_counter() - t0:.2f} s (once per process)")
    max_steps = adapter.make_env().max_steps
    env_rates, rule_rates = [], []
    for r in range(args.repeats):
        actions = np.random.default_rng(r).integers(NUM_ACTIONS, size=args.steps)
        env_rates.append(env_rate(adapter, actions, r))
        rule_rates.append(rules_rate(adapter, actions, r, max_steps))
    env_median, rules_median = statistics.median(env_rates), statistics.median(rule_rates)
    print(f"env (random policy, resets included): median {env_median:,.0f} steps/s over {args.repeats} x {args.steps}")
    print(f"baseline, episode rules only:         median {rules_median:,.0f} steps/s")
    print(f"ratio env / rules: {env_median / rules_median:.2f}")


if __name__ == "__main__":
    main()
