"""Helpers for the speed benchmarks: medians, steady-state training throughput."""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Callable

from llmexplore.agents.training import train
from llmexplore.agents.run_settings import RunSettings
from llmexplore.benchmarks.run.spec import RunSpec, resolve


def median_rate(fn: Callable[[], float], repeats: int) -> tuple[float, list[float]]:
    """Median of ``repeats`` calls of fn (each returns a rate)."""
    rates = [fn() for _ in range(repeats)]
    return statistics.median(rates), rates


class _Timeline:
    def __init__(self) -> None:
        self.points: list[tuple[float, int]] = []

    def on_episode(self, row) -> None: ...

    def on_intrinsic_returns(self, env_steps, returns) -> None: ...

    def on_metrics(self, env_steps, metrics) -> None: ...

    def on_parent(self, report) -> None: ...

    def on_episodes_through(self, env_steps) -> None: ...

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        self.points.append((time.perf_counter(), env_steps))


def training_rate(method: str, task: str, steps: int, warmup_fraction: float = 0.25, seed: int = 0,
                  method_options: dict | None = None, train_options: dict | None = None) -> float:
    """Env steps/s of real training, measured after a warm-up share of the budget
    (start-up, first batches and JIT compilation excluded)."""
    spec = RunSpec(method=method, task=task, seed=seed, steps=steps, method_options=method_options or {},
                   train=train_options or {})
    resolved = resolve(spec)
    timeline = _Timeline()
    with tempfile.TemporaryDirectory() as tmp:
        result = train(RunSettings.of(resolved, tmp), timeline)
    assert result.status == "complete", result
    points = [(t, s) for t, s in timeline.points if s >= warmup_fraction * steps]
    (t0, s0), (t1, s1) = points[0], points[-1]
    return (s1 - s0) / (t1 - t0)


def adapter_rate(task: str, steps: int) -> float:
    """Env steps/s of a task's adapter env under uniformly random actions (resets included)."""
    import numpy as np

    from llmexplore.envs import make_adapter

    env = make_adapter(task).make_env()
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.action_space.n, steps)
    t = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - t)
    env.close()
    return rate
