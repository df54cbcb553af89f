"""Training steps/s of the LM-free exploration baselines against `none`, measured in the same run.

    PYTHONPATH=. python tests/perf/bench_baselines.py [--repeats 3] [--steps 16384] [--in-order] [--tasks crafter:reward-free nethack:score]
    PYTHONPATH=. python tests/perf/bench_baselines.py --sampling per-env batched -t num_workers=2 [...]
    PYTHONPATH=. python tests/perf/bench_baselines.py --cpu [--repeats 5]

Each method trains on each task for ``--steps`` env steps with the family's default (serial) settings;
the rate is measured after a warm-up quarter. Methods are interleaved repeat by repeat, so a change in the
machine's load hits all of them alike, and the medians are compared. Target: each method at most 15%
slower than `none` (``ratio`` >= 0.85). ``--sampling per-env batched`` measures every method on each
sampling path, each ratio against `none` on the same path (issue 54); ``-t KEY=VALUE`` adds training settings
to every run (``-t num_workers=2`` for two rollout workers).

``--cpu`` measures what a method adds in CPU time instead, which a loaded machine disturbs far less than
wall time: one thread's CPU seconds of ``reward`` and of ``update`` on a learner batch of real observations
(the family's batch size), per 1,000 transitions, beside the CPU seconds per 1,000 env steps of a whole
`none` training process (env, inference, learner). Their ratio is the expected slowdown in serial mode
with everything in order; where the method's update runs beside PPO's (``train.update_thread``) and a
core is free, only ``reward`` stays on the path, which bounds the rate from above.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from llmexplore.number_input import number_type
from tests.perf.common import train_options, training_rate

METHODS = ("none", "rnd", "e3b", "noveld", "icm")
#: the row suffix of a method trained with ``-t update_thread=false``
IN_ORDER = " (in order)"


def method_cpu_per_1000(method: str, task: str, repeats: int) -> tuple[float, float]:
    """Median CPU seconds (this thread) of ``reward`` and of ``update`` per 1,000 transitions of a real
    learner batch."""
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
    take = lambda seq: np.ascontiguousarray(np.stack(seq[: rows * (length + 1)])).reshape(
        rows, length + 1, *np.shape(seq[0]))
    batch_obs = {k: torch.as_tensor(take([f[k] for f in frames])) for k in frames[0]}
    batch_obs[ENV_UID_KEY] = (torch.arange(rows, dtype=torch.int32) % envs)[:, None, None].expand(rows, length + 1, 1)
    cls = get_method(method)
    instance = cls(parse_options(cls, {}), MethodContext(task=spec, seed=0, run_dir=Path("."),
                                                         num_actions=int(env.action_space.n)),
                   adapter.observation_space())
    rewards, updates = [], []
    for _ in range(repeats + 1):  # the first call warms up
        batch = RewardBatch(obs=batch_obs, actions=torch.as_tensor(take(actions)[:, :length]),
                            dones=torch.as_tensor(take(dones)[:, :length]))
        start = time.thread_time()
        with torch.no_grad():
            instance.reward(batch)
        middle = time.thread_time()
        instance.update(batch)
        rewards.append((middle - start) * 1000 / (rows * length))
        updates.append((time.thread_time() - middle) * 1000 / (rows * length))
    return statistics.median(rewards[1:]), statistics.median(updates[1:])


def _train(method: str, task: str, steps: int) -> None:
    import tempfile

    from llmexplore.agents.training import train
    from llmexplore.benchmarks.run.spec import RunSpec, resolve
    from tests.perf.common import _Timeline

    with tempfile.TemporaryDirectory() as tmp:
        result = train(resolve(RunSpec(method=method, task=task, seed=0, steps=steps)), tmp, _Timeline())
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
        print("| method | CPU s per 1,000 transitions: reward + update (median) | expected ratio to none, "
              "in order | the same, update beside PPO on a free core (at best) |")
        print("| --- | --- | --- | --- |")
        for method in args.methods:
            if method == "none":
                continue
            reward, update = method_cpu_per_1000(method, task, args.repeats)
            print(f"| {method} | {reward:.3f} + {update:.3f} | {base / (base + reward + update):.2f} "
                  f"| {base / (base + reward):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=number_type(int, 1, 100), default=3,
                        help="interleaved rounds per method and task; the table shows their median")
    parser.add_argument("--steps", type=number_type(int, 8192, 10_000_000), default=16384,
                        help="env steps of each training run, several learner batches (the first quarter "
                             "warms up, unmeasured)")
    parser.add_argument("--tasks", nargs="+", default=["crafter:reward-free", "nethack:score"],
                        help="tasks to train on, each with its family's default serial settings")
    parser.add_argument("--methods", nargs="+", default=list(METHODS),
                        help="methods to measure; `none`, the baseline of every ratio, is always added")
    parser.add_argument("--cpu", action="store_true", help="CPU time of each method's learner work instead")
    parser.add_argument("--sampling", nargs="+", choices=["default", "per-env", "batched"], default=["default"],
                        help="sampling paths to measure (default: the family's); ratios are within a path")
    parser.add_argument("-t", "--train", action="append", default=[], metavar="KEY=VALUE",
                        help="a training setting added to every run, e.g. -t num_workers=2")
    parser.add_argument("--in-order", action="store_true",
                        help="also train each method with its update in order (-t update_thread=false), "
                             "interleaved with the rest")
    args = parser.parse_args()
    if args.cpu:
        cpu_table(args)
        return
    from llmexplore.methods import get_method

    base_runs = ["none"] + [m for m in args.methods if m != "none"]
    if args.in_order:  # each method that may train beside PPO, once more with everything in order
        base_runs += [f"{m}{IN_ORDER}" for m in base_runs if m != "none" and get_method(m).update_beside_policy]
    settings = train_options(args.train)
    for task in args.tasks:
        for path in args.sampling:
            rates: dict[str, list[float]] = {m: [] for m in base_runs}
            for _ in range(args.repeats):
                for run in base_runs:
                    method, in_order = run.removesuffix(IN_ORDER), run.endswith(IN_ORDER)
                    train = dict(settings, **({"update_thread": False} if in_order else {}))
                    if path != "default":
                        train["sampling"] = path
                    rates[run].append(training_rate(method, task, args.steps, train_options=train))
            base = statistics.median(rates["none"])
            print(f"\n{task}, sampling {path}, {settings or 'family defaults'}: {args.steps:,} env steps per run, "
                  f"median of {args.repeats} (warm-up quarter excluded)")
            print("| method | env steps/s (median) | runs | ratio to none |")
            print("| --- | --- | --- | --- |")
            for run in base_runs:
                median = statistics.median(rates[run])
                values = ", ".join(f"{r:,.0f}" for r in rates[run])
                print(f"| {run} | {median:,.0f} | {values} | {median / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
