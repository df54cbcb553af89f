"""Crafter steps/s: stock crafter.Env, our adapter on Crafter's own code (reference) and accelerated.

    PYTHONPATH=. nice -n 10 python tests/perf/bench_crafter.py [--repeats 5] [--steps 3000]
        [--train-steps 20000] [--train-repeats 3] [--modes serial workers2] [--skip-training]

Every measurement alternates the variants (stock, reference, accelerated, stock, ...) so that
machine noise hits all alike; the figures are medians. Random actions, resets included.
Training is `none` on crafter:reward-free with the default settings (``serial``) and with
two rollout workers (``workers2``), on each path, steady state after a quarter of the budget.
Target: accelerated >= 3x the reference path's steps/s.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from llmexplore.envs.crafter.adapter import RENDER_ENV
from tests.perf.bench_training import crafter_adapter, crafter_raw as stock  # stock: crafter.Env itself
from tests.perf.common import training_rate

MODES: dict[str, dict] = {"serial": {}, "workers2": {"num_workers": 2}}


def adapter(render: str):
    """Our adapter's env (as training builds it) on the given Crafter path."""
    def run(steps: int) -> float:
        os.environ[RENDER_ENV] = render
        return crafter_adapter(steps)

    return run


def alternate(variants: dict, repeats: int, *args) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            runs[name].append(fn(*args))
    return runs


def report(runs: dict[str, list[float]], unit: str) -> dict[str, float]:
    medians = {name: float(np.median(r)) for name, r in runs.items()}
    for name, r in runs.items():
        print(f"  {name:12s} {medians[name]:8,.0f} {unit}   (runs {[round(x) for x in r]})")
    return medians


def trained(render: str, mode: str, steps: int) -> float:
    os.environ[RENDER_ENV] = render  # read by env construction, in this process and in rollout workers
    try:
        return training_rate("none", "crafter:reward-free", steps, train_options=MODES[mode])
    finally:
        os.environ.pop(RENDER_ENV, None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--train-steps", type=int, default=20_000)
    parser.add_argument("--train-repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["serial", "workers2"])
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()

    adapter("accelerated")(50)  # load numba's cached kernels before timing
    print(f"# Crafter env steps/s, random actions with resets, {args.steps} steps, median of {args.repeats}")
    env = report(alternate({"stock": stock, "reference": adapter("reference"),
                            "accelerated": adapter("accelerated")}, args.repeats, args.steps), "steps/s")
    print(f"  accelerated / reference = {env['accelerated'] / env['reference']:.2f}x, "
          f"accelerated / stock = {env['accelerated'] / env['stock']:.2f}x")
    if args.skip_training:
        return
    for mode in args.modes:
        print(f"\n# training `none` on crafter:reward-free, {mode}, {args.train_steps} steps, "
              f"median of {args.train_repeats} (steady state)")
        runs = alternate({path: (lambda p=path: trained(p, mode, args.train_steps))
                          for path in ("reference", "accelerated")}, args.train_repeats)
        rates = report(runs, "env steps/s")
        speedup = rates["accelerated"] / rates["reference"]
        minutes = {path: 1e6 / rate / 60 for path, rate in rates.items()}
        print(f"  accelerated / reference = {speedup:.2f}x;  1M steps: "
              f"reference {minutes['reference']:.0f} min, accelerated {minutes['accelerated']:.0f} min")
        if mode == "serial":
            # serial training alternates sampling and learning, so time per step adds up
            env_share = rates["accelerated"] / env["accelerated"]
            print(f"  simulator share of a serial training step: {100 * env_share:.0f}% "
                  f"(the rest is policy inference and the learner)")


if __name__ == "__main__":
    main()
