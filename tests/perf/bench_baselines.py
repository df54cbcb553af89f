"""Training steps/s of the LM-free exploration baselines against `none`, measured in the same run.

    PYTHONPATH=. python tests/perf/bench_baselines.py [--repeats 3] [--steps 16384] [--tasks crafter:reward-free nethack:score]

Each method trains on each task for ``--steps`` env steps with the family's default (serial) settings;
the rate is measured after a warm-up quarter. Methods are interleaved repeat by repeat, so a change in the
machine's load hits all of them alike, and the medians are compared. Target: each method at most 15%
slower than `none` (``ratio`` >= 0.85).
"""

from __future__ import annotations

import argparse
import statistics

from tests.perf.common import training_rate

METHODS = ("none", "rnd", "e3b", "noveld", "icm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--tasks", nargs="+", default=["crafter:reward-free", "nethack:score"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args()
    methods = ["none"] + [m for m in args.methods if m != "none"]
    for task in args.tasks:
        rates: dict[str, list[float]] = {m: [] for m in methods}
        for _ in range(args.repeats):
            for method in methods:
                rates[method].append(training_rate(method, task, args.steps))
        base = statistics.median(rates["none"])
        print(f"\n{task}: {args.steps:,} env steps per run, median of {args.repeats} (warm-up quarter excluded)")
        print("| method | env steps/s (median) | runs | ratio to none |")
        print("| --- | --- | --- | --- |")
        for method in methods:
            median = statistics.median(rates[method])
            runs = ", ".join(f"{r:,.0f}" for r in rates[method])
            print(f"| {method} | {median:,.0f} | {runs} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
