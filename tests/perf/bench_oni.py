"""Training speed of the ONI methods against `none` on nethack:score, measured in the same run.

After one warm-up run, each repeat trains none, oni-retrieval, oni-classification and
oni-ranking in a rotated order (so all see similar machine load) and measures the
steady-state env steps/s after the first quarter of the budget (start-up, first batches and
the first wave of new captions excluded; see tests/perf/common.py). It prints per-method
medians, the median of per-repeat ratios to `none` (robust to load changing between
repeats), what the methods reported (reward and update ms per batch, share of wall time in
reward-model training, labels), and the load average around each run.

Targets: oni-retrieval >= 85% of none; oni-classification and oni-ranking >= 70%.

    PYTHONPATH=$PWD python tests/perf/bench_oni.py [--steps 40000] [--repeats 3] [--server]

--server puts the oracle behind `llmexplore lm serve` (a subprocess, HTTP) instead of in the
learner process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmexplore.agents.training import train  # noqa: E402
from llmexplore.benchmarks.run.spec import RunSpec, resolve  # noqa: E402

METHODS = ("none", "oni-retrieval", "oni-classification", "oni-ranking")
TARGETS = {"oni-retrieval": 0.85, "oni-classification": 0.70, "oni-ranking": 0.70}


class Sink:
    """Progress points and the method's metrics of one training run."""

    def __init__(self) -> None:
        self.points: list[tuple[float, int]] = []
        self.metrics: list[dict[str, float]] = []

    def on_episode(self, row) -> None: ...

    def on_intrinsic_returns(self, env_steps, returns) -> None: ...

    def on_parent(self, report) -> None: ...

    def on_episodes_through(self, env_steps) -> None: ...

    def on_metrics(self, env_steps: int, metrics: dict[str, float]) -> None:
        self.metrics.append({"env_steps": env_steps, **metrics})

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        self.points.append((time.perf_counter(), env_steps))


def measure(method: str, steps: int, seed: int, lm: dict[str, Any], warmup: float) -> dict[str, Any]:
    spec = RunSpec(method=method, task="nethack:score", seed=seed, steps=steps, lm=lm)
    resolved = resolve(spec)
    sink = Sink()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = train(resolved, tmp, sink)
    wall = time.perf_counter() - started
    assert result.status == "complete", result
    points = [(t, s) for t, s in sink.points if s >= warmup * steps]
    (t0, s0), (t1, s1) = points[0], points[-1]
    later = [m for m in sink.metrics if m["env_steps"] >= warmup * steps]
    out: dict[str, Any] = {"rate": (s1 - s0) / (t1 - t0), "session_rate": result.session_env_steps / wall,
                           "load": (load_before + os.getloadavg()[0]) / 2}
    if later:
        for key in ("oni_reward_ms_per_batch", "oni_update_ms_per_batch"):
            values = [m[key] for m in later if key in m]
            if values:
                out[key] = statistics.median(values)
        last = sink.metrics[-1]
        out["labels"] = last.get("oni_labels_total")
        if "oni_rm_train_seconds" in last:
            out["rm_share"] = last["oni_rm_train_seconds"] / wall
            out["rm_steps"] = last["oni_rm_steps"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=0.25, help="share of the budget left out of the rate")
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--server", action="store_true", help="oracle behind `llmexplore lm serve` (HTTP)")
    args = parser.parse_args()
    methods = ["none"] + [m for m in args.methods if m != "none"]

    server = None
    lm: dict[str, Any] = {"cache": ":memory:"}
    if args.server:
        from tests.helpers.lm_server import ServerProcess

        server = ServerProcess()
        lm = {"backend": "openai", "base_url": server.base_url, "model": server.model, "cache": ":memory:"}
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    try:
        print(f"warm-up (none, {args.steps // 4} steps) ...", flush=True)
        measure("none", max(args.steps // 4, 4096), 99, lm, args.warmup)
        for rep in range(args.repeats):
            k = rep % len(methods)
            order = methods[k:] + methods[:k]
            for method in order:
                r = measure(method, args.steps, rep, lm, args.warmup)
                results[method].append(r)
                extra = "".join(f", {key} {r[key]:.3g}" for key in ("oni_reward_ms_per_batch",
                                "oni_update_ms_per_batch", "rm_share", "rm_steps", "labels") if r.get(key) is not None)
                print(f"rep {rep} {method:>18}: {r['rate']:7.0f} steps/s steady, {r['session_rate']:7.0f} whole "
                      f"session, load {r['load']:.1f}{extra}", flush=True)
    finally:
        if server is not None:
            server.stop()

    none = [r["rate"] for r in results["none"]]
    print(f"\nnethack:score, {args.steps} steps per run, {args.repeats} repeats, steady state after "
          f"{args.warmup:.0%} of the budget; LM: {'HTTP server' if server else 'embedded oracle'}")
    print(f"{'method':>18}  {'median steps/s':>14}  {'median ratio':>12}  {'ratios':>24}  target")
    for method in methods:
        rates = [r["rate"] for r in results[method]]
        ratios = [r / n for r, n in zip(rates, none)]
        target = TARGETS.get(method)
        verdict = "" if target is None else f">= {target:.0%} {'ok' if statistics.median(ratios) >= target else 'MISSED'}"
        print(f"{method:>18}  {statistics.median(rates):14.0f}  {statistics.median(ratios):12.3f}  "
              f"{' '.join(f'{x:.2f}' for x in ratios):>24}  {verdict}")
    loads = [r["load"] for rs in results.values() for r in rs]
    print(f"load average during the runs: median {statistics.median(loads):.1f} (min {min(loads):.1f}, "
          f"max {max(loads):.1f}) on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
