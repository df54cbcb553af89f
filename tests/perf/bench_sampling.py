"""Training steps/s on the per-env and the batched sampling path, side by side in one run (issue 54).

    PYTHONPATH=. python tests/perf/bench_sampling.py [--repeats 3] [--families nethack crafter minihack]
        [-t KEY=VALUE ...] [--scale 1.0]

Targets (issue 54, 2-core CPU, `none`, 2 rollout workers, small network): NetHack batched >= 1.35x per-env,
Crafter >= 1.3x, MiniHack no slower. The machine this runs on is usually shared, so the two paths run
interleaved (their order alternating between repeats), each figure is a median of ``--repeats``, the
load average is printed beside each run, and the ratio of medians is what to compare between runs of this
script. CPU microseconds per env step, by process role, move much less with the load than the rates do.
MiniHack's line also gives the share of its adapter's time spent in resets (random actions, one process).

``--scale`` multiplies every budget (0.1 rehearses the script in a minute); ``-t`` adds training settings to
both paths (e.g. ``-t num_workers=16 -t device=gpu`` on a GPU machine, see tests/perf/gpu_sampling.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from tests.perf.common import train_options, training_rate_and_cpu

#: family: (task, training budget in env steps at scale 1)
FAMILIES = {
    "nethack": ("nethack:score", 120_000),
    "crafter": ("crafter:reward-free", 40_000),
    "minihack": ("minihack:multiroom-n2", 60_000),
    "housekeep": ("housekeep:pomaria_0", 40_000),
}
PATHS = ("per-env", "batched")


def reset_share(task: str, steps: int = 5_000) -> tuple[float, int]:
    """The share of the adapter env's time spent in resets under random actions, and the resets made."""
    import numpy as np

    from llmexplore.envs import make_adapter

    env = make_adapter(task).make_env()
    start = time.perf_counter()
    env.reset(seed=0)
    in_reset, resets = time.perf_counter() - start, 1
    for action in np.random.default_rng(0).integers(0, env.action_space.n, steps):
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            t = time.perf_counter()
            env.reset()
            in_reset, resets = in_reset + time.perf_counter() - t, resets + 1
    total = time.perf_counter() - start
    env.close()
    return in_reset / total, resets


def measure(task: str, budget: int, repeats: int, train: dict) -> dict[str, list[tuple[float, dict, float]]]:
    """(steps/s, CPU us per step by role, 1-min load after the run) of each path, ``repeats`` times, interleaved."""
    runs: dict[str, list[tuple[float, dict, float]]] = {path: [] for path in PATHS}
    for repeat in range(repeats):
        for path in PATHS if repeat % 2 == 0 else PATHS[::-1]:
            rate, cpu = training_rate_and_cpu("none", task, budget, train_options={**train, "sampling": path})
            load = os.getloadavg()[0]
            runs[path].append((rate, cpu, load))
            roles = ", ".join(f"{role} {us:.0f}" for role, us in cpu.items() if role != "total")
            print(f"  {task} {path:8s} repeat {repeat + 1}: {rate:8,.0f} steps/s, CPU {cpu.get('total', 0):6.0f} us "
                  f"per step ({roles}), load {load:.2f}", flush=True)
    return runs


def summary(task: str, runs: dict[str, list[tuple[float, dict, float]]]) -> str:
    medians = {path: statistics.median(rate for rate, _, _ in runs[path]) for path in PATHS}
    cpu = {path: statistics.median(c.get("total", 0.0) for _, c, _ in runs[path]) for path in PATHS}
    loads = [load for path in PATHS for _, _, load in runs[path]]
    return (f"{task:24s} per-env {medians['per-env']:8,.0f}  batched {medians['batched']:8,.0f} steps/s  "
            f"ratio {medians['batched'] / medians['per-env']:.2f}x  CPU per step {cpu['per-env']:.0f} -> "
            f"{cpu['batched']:.0f} us  (load {min(loads):.1f}-{max(loads):.1f}; runs "
            f"{[round(r) for r, _, _ in runs['per-env']]} vs {[round(r) for r, _, _ in runs['batched']]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--families", nargs="+", choices=sorted(FAMILIES), default=["nethack", "crafter", "minihack"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every training budget")
    parser.add_argument("-t", "--train", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    train = {"num_workers": args.workers, **train_options(args.train)}
    print(f"# none, {train}, both paths interleaved, median of {args.repeats}; load at start "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    lines = []
    for family in args.families:
        task, budget = FAMILIES[family]
        lines.append(summary(task, measure(task, max(int(budget * args.scale), 8192), args.repeats, train)))
        if family == "minihack":
            share, resets = reset_share(task)
            lines.append(f"{'':24s} resets take {100 * share:.0f}% of the adapter's time ({resets} in 5,000 random "
                         f"steps)")
        print(lines[-1], flush=True)
    print("\n# summary\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
