"""Training steps/s of the LM-free exploration baselines against `none`, measured in the same run.

    PYTHONPATH=. python tests/perf/bench_baselines.py [--repeats 3] [--steps 16384] [--tasks crafter:reward-free nethack:score]
    PYTHONPATH=. python tests/perf/bench_baselines.py --cpu [--repeats 5]

Each method trains on each task for ``--steps`` env steps with the family's default (serial) settings;
the rate is measured after a warm-up quarter. Methods are interleaved repeat by repeat, so a change in the
machine's load hits all of them alike, and the medians are compared. Target: each method at most 15%
slower than `none` (``ratio`` >= 0.85).

``--cpu`` measures what a method adds in CPU time instead, which a loaded machine disturbs far less than
wall time: one thread's CPU seconds of ``reward`` + ``update`` on a learner batch of real observations
(the family's batch size), per 1,000 transitions, beside the CPU seconds per 1,000 env steps of a whole
`none` training process (env, inference, learner). Their ratio is the expected slowdown in serial mode.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from tests.perf.common import training_rate

METHODS = ("none", "rnd", "e3b", "noveld", "icm")


def method_cpu_per_1000(method: str, task: str, repeats: int) -> float:
    """Median CPU seconds (this thread) of reward + update per 1,000 transitions of a real learner batch."""
    import numpy as np
    import torch

    from llmexplore.agents.train_config import family_defaults
    from llmexplore.envs import get_task, make_adapter
    from llmexplore.envs.base import ENV_UID_KEY
    from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options

    torch.set_num_threads(1)
    spec = get_task(task)
    adapter = make_adapter(spec)
    defaults = family_defaults(spec.family)
    batch_size, envs = int(defaults.get("batch_size", 1024)), int(defaults.get("envs_per_worker", 16))
    rows, length = batch_size // 32, 32
    env = adapter.make_env()
    obs, _ = env.reset(seed=0)
    frames, actions, dones = [obs], [], []
    rng = np.random.default_rng(0)
    for _ in range(rows * (length + 1)):
        actions.append(int(rng.integers(env.action_space.n)))
        obs, _, terminated, truncated, _ = env.step(actions[-1])
        dones.append(float(terminated or truncated))
        if terminated or truncated:
            obs, _ = env.reset()
        frames.append(obs)
    env.close()
    # C order, as the learner's buffers hold them (stacking Crafter's transposed frames keeps their layout)
    take = lambda seq: np.ascontiguousarray(np.stack(seq[: rows * (length + 1)])).reshape(  # noqa: E731
        rows, length + 1, *np.shape(seq[0]))
    batch_obs = {k: torch.as_tensor(take([f[k] for f in frames])) for k in frames[0]}
    batch_obs[ENV_UID_KEY] = (torch.arange(rows, dtype=torch.int32) % envs)[:, None, None].expand(rows, length + 1, 1)
    cls = get_method(method)
    instance = cls(parse_options(cls, {}), MethodContext(task=spec, seed=0, run_dir=Path("."),
                                                         num_actions=int(env.action_space.n)),
                   adapter.observation_space())
    costs = []
    for _ in range(repeats + 1):  # the first call warms up
        batch = RewardBatch(obs=batch_obs, actions=torch.as_tensor(take(actions)[:, :length]),
                            dones=torch.as_tensor(take(dones)[:, :length]))
        start = time.thread_time()
        with torch.no_grad():
            instance.reward(batch)
        instance.update(batch)
        costs.append((time.thread_time() - start) * 1000 / (rows * length))
    return statistics.median(costs[1:])


def _train(method: str, task: str, steps: int) -> None:
    import tempfile

    from llmexplore.agents.run_settings import RunSettings
    from llmexplore.agents.training import train
    from llmexplore.benchmarks.run.spec import RunSpec, resolve
    from tests.perf.common import _Timeline

    with tempfile.TemporaryDirectory() as tmp:
        result = train(RunSettings.of(resolve(RunSpec(method=method, task=task, seed=0, steps=steps)), tmp), _Timeline())
    assert result.status == "complete", result


def none_cpu_per_1000(task: str, steps: int) -> float:
    """CPU seconds of the whole (serial) `none` training process per 1,000 env steps, start-up excluded."""
    import resource

    _train("none", task, 4096)  # imports and first-use costs out of the way
    before = resource.getrusage(resource.RUSAGE_SELF)
    _train("none", task, steps)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / steps


def cpu_table(args: argparse.Namespace) -> None:
    for task in args.tasks:
        base = none_cpu_per_1000(task, args.steps)
        print(f"\n{task}: `none` training uses {base:.2f} CPU s per 1,000 env steps (whole process, {args.steps:,} steps)")
        print("| method | CPU s per 1,000 transitions (reward + update, median) | expected ratio to none |")
        print("| --- | --- | --- |")
        for method in args.methods:
            if method == "none":
                continue
            cost = method_cpu_per_1000(method, task, args.repeats)
            print(f"| {method} | {cost:.3f} | {base / (base + cost):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--tasks", nargs="+", default=["crafter:reward-free", "nethack:score"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--cpu", action="store_true", help="CPU time of each method's learner work instead")
    args = parser.parse_args()
    if args.cpu:
        cpu_table(args)
        return
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
