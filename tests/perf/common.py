"""Helpers for the speed benchmarks: medians, steady-state training throughput."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from llmexplore.agents.training import train
from llmexplore.benchmarks.run.spec import RunSpec, resolve


def parse_value(text: str) -> Any:
    """A command-line value as an int, a float, a bool ("true"/"false") or else the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def train_options(pairs: Sequence[str]) -> dict[str, Any]:
    """Training settings from ``-t KEY=VALUE`` pairs; a dotted key sets a nested one
    (``sf_args.worker_num_splits=2`` sets one sample-factory option)."""
    train: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"-t {pair}: expected KEY=VALUE, e.g. -t envs_per_worker=16")
        key, value = pair.split("=", 1)
        *outer, last = key.split(".")
        holder = train
        for part in outer:
            holder = holder.setdefault(part, {})
        holder[last] = parse_value(value)
    return train


def median_rate(fn: Callable[[], float], repeats: int) -> tuple[float, list[float]]:
    """Median of ``repeats`` calls of fn (each returns a rate)."""
    rates = [fn() for _ in range(repeats)]
    return statistics.median(rates), rates


class _Timeline:
    def __init__(self, cpu: bool = False) -> None:
        self.points: list[tuple[float, int]] = []
        #: CPU seconds of this process and its descendants at each point, by role (when ``cpu``)
        self.cpu: list[dict[str, float]] = []
        self._measure_cpu = cpu

    def on_episode(self, row) -> None: ...

    def on_intrinsic_returns(self, env_steps, returns) -> None: ...

    def on_metrics(self, env_steps, metrics) -> None: ...

    def on_parent(self, report) -> None: ...

    def on_episodes_through(self, env_steps) -> None: ...

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        self.points.append((time.perf_counter(), env_steps))
        if self._measure_cpu:
            self.cpu.append(process_tree_cpu())


#: sample-factory 2.1.1 renices its processes from default_niceness (0): the learner +0, the inference
#: worker +2, rollout workers +10 (when there are several); that tells them apart here
_ROLE_BY_NICENESS_OFFSET = {0: "learner", 2: "inference", 10: "rollout workers"}


def process_tree_cpu() -> dict[str, float]:
    """User + system CPU seconds of this process ("main") and its living descendants, by role where the
    niceness tells it (see ``_ROLE_BY_NICENESS_OFFSET``; "children" otherwise)."""
    import psutil

    me = psutil.Process()
    out = {"main": sum(me.cpu_times()[:2])}
    children = []
    for proc in me.children(recursive=True):
        try:
            children.append((proc.nice(), sum(proc.cpu_times()[:2])))
        except psutil.NoSuchProcess:
            continue
    levels = {nice for nice, _ in children}
    base = min(levels, default=0)
    distinct = {nice - base for nice in levels} >= set(_ROLE_BY_NICENESS_OFFSET)  # all three roles told apart
    for nice, seconds in children:
        role = _ROLE_BY_NICENESS_OFFSET.get(nice - base, "other") if distinct else "children"
        out[role] = out.get(role, 0.0) + seconds
    return out


def training_rate(method: str, task: str, steps: int, warmup_fraction: float = 0.25, seed: int = 0,
                  method_options: dict | None = None, train_options: dict | None = None) -> float:
    """Env steps/s of real training, measured after a warm-up share of the budget
    (start-up, first batches and JIT compilation excluded)."""
    return training_rate_and_cpu(method, task, steps, warmup_fraction, seed, method_options, train_options,
                                 cpu=False)[0]


def training_rate_and_cpu(method: str, task: str, steps: int, warmup_fraction: float = 0.25, seed: int = 0,
                          method_options: dict | None = None, train_options: dict | None = None,
                          cpu: bool = True) -> tuple[float, dict[str, float]]:
    """Env steps/s of real training and the CPU microseconds its processes spent per env step (by role, see
    ``process_tree_cpu``, and "total"), both over the same stretch after the warm-up. The CPU figures move
    much less with the machine's load than the rate does."""
    spec = RunSpec(method=method, task=task, seed=seed, steps=steps, method_options=method_options or {},
                   train=train_options or {})
    resolved = resolve(spec)
    timeline = _Timeline(cpu=cpu)
    with tempfile.TemporaryDirectory() as tmp:
        result = train(resolved, tmp, timeline)
    assert result.status == "complete", result
    kept = [i for i, (_, s) in enumerate(timeline.points) if s >= warmup_fraction * steps]
    if len(kept) < 2:
        raise ValueError(f"{method} on {task}: {len(kept)} progress report(s) after the warm-up of {steps:,} "
                         "steps, two are needed for a rate; train for more steps (several learner batches)")
    first, last = kept[0], kept[-1]
    (t0, s0), (t1, s1) = timeline.points[first], timeline.points[last]
    cpu_per_step: dict[str, float] = {}
    if cpu:
        before, after = timeline.cpu[first], timeline.cpu[last]
        for role in after:  # a role's processes live from start to end: all are in both snapshots
            cpu_per_step[role] = 1e6 * (after[role] - before.get(role, 0.0)) / (s1 - s0)
        cpu_per_step["total"] = sum(cpu_per_step.values())
    return (s1 - s0) / (t1 - t0), cpu_per_step


def random_action_rate(env, steps: int, seed: int = 0, close: bool = True) -> float:
    """Env steps/s of a gymnasium env (already reset) under seeded uniformly random actions, resets
    included; closes the env unless the caller still reads it."""
    import numpy as np

    actions = np.random.default_rng(seed).integers(0, env.action_space.n, steps)
    t = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - t)
    if close:
        env.close()
    return rate


def adapter_rate(task: str, steps: int) -> float:
    """Env steps/s of a task's adapter env under uniformly random actions (resets included)."""
    from llmexplore.envs import make_adapter

    env = make_adapter(task).make_env()
    env.reset(seed=0)
    return random_action_rate(env, steps)
