"""Training speed as a share of the raw simulator's, both measured in the same run.

    PYTHONPATH=. python tests/perf/bench_overhead.py [--repeats 3] [--workers 2] [-t KEY=VALUE ...]

Target (issue 39, 2-core CPU): `none` on NetHack with two rollout workers and the small network
trains at >= 20% of the raw NLE env's steps/s (one process, random actions); Crafter's ratio is
reported beside it. The machine this runs on is usually shared, so absolute rates move with the
load: raw and training runs are interleaved, each figure is a median of ``--repeats``, and the ratio
is what to compare between runs of this script.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from tests.perf.bench_training import crafter_raw, nethack_raw
from tests.perf.common import train_options, training_rate_and_cpu

TASKS = {  # task: (raw env rate function, raw env steps per measurement, training budget)
    "nethack:score": (nethack_raw, 20_000, 120_000),
    "crafter:reward-free": (crafter_raw, 3_000, 40_000),
}


def raw_rate_and_cpu(raw_fn: Callable[[int], float], steps: int) -> tuple[float, float]:
    """The raw env's steps/s and its CPU microseconds per step (construction included, a few ms)."""
    cpu = time.process_time()
    rate = raw_fn(steps)
    return rate, 1e6 * (time.process_time() - cpu) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="measurements of each figure (medians are printed)")
    parser.add_argument("--workers", type=int, default=2, help="rollout worker processes (train.num_workers)")
    parser.add_argument("--method", default="none", help="exploration method trained")
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS, reverse=True))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every step count (e.g. 0.25 for a quick look)")
    parser.add_argument("-t", "--train", action="append", default=[], metavar="KEY=VALUE",
                        help="training option for every training run (the small network unless a -t network "
                             "or a -t preset names another)")
    args = parser.parse_args()
    if args.repeats < 1 or args.workers < 1 or not 0 < args.scale <= 100:
        parser.error("--repeats and --workers must be >= 1 and --scale in (0, 100]")
    # the network is left to the run's defaults (small), so that a preset's network applies
    train = {"num_workers": args.workers, **train_options(args.train)}

    print(f"# {args.method}, training options {train}; medians of {args.repeats} (raw and training interleaved)")
    for task in args.tasks:
        raw_fn, env_steps, budget = TASKS[task]
        env_steps, budget = max(int(env_steps * args.scale), 500), max(int(budget * args.scale), 8_192)
        raws, raw_cpus, trains, train_cpus = [], [], [], []  # train_cpus: per run, CPU us per step by role
        for _ in range(args.repeats):
            rate, cpu = raw_rate_and_cpu(raw_fn, env_steps)
            raws.append(rate)
            raw_cpus.append(cpu)
            rate, cpu = training_rate_and_cpu(args.method, task, budget, train_options=train)
            trains.append(rate)
            train_cpus.append(cpu)
        raw, trained = statistics.median(raws), statistics.median(trains)
        raw_cpu = statistics.median(raw_cpus)
        roles = {role: statistics.median(run.get(role, 0.0) for run in train_cpus) for role in train_cpus[0]}
        train_cpu = roles.pop("total")
        print(f"{task:20s} raw env {raw:8,.0f} steps/s   training {trained:7,.0f} steps/s   "
              f"ratio {100 * trained / raw:5.1f}%   (raw {[round(x) for x in raws]}, training "
              f"{[round(x) for x in trains]})", flush=True)
        print(f"{'':20s} CPU per env step: raw env {raw_cpu:6.1f} us, training {train_cpu:6.1f} us (all processes), "
              f"env share {100 * raw_cpu / train_cpu:5.1f}%   (training runs "
              f"{[round(run['total']) for run in train_cpus]} us)", flush=True)
        print(f"{'':20s} training CPU per env step by process: "
              + ", ".join(f"{role} {us:.1f} us" for role, us in sorted(roles.items(), key=lambda kv: -kv[1])),
              flush=True)


if __name__ == "__main__":
    main()
