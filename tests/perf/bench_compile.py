"""The policy network eager against ``torch.compile``d, measured in the same run (issue 54, "networks that keep up").

Why: on two cores the inference worker and the learner spend about 240 µs of CPU per NetHack env step (docs/GPU.md),
more than the game and the sampler together, so a compiler that fused the small network's many little operations
would raise training's ceiling without changing what the network computes.

    PYTHONPATH=. python tests/perf/bench_compile.py [--tasks nethack:score crafter:reward-free] [--repeats 5]
        [--inference-batch 32] [--learner-batch 2048] [--threads 1] [--mode default]
    PYTHONPATH=. python tests/perf/bench_compile.py --training [--tasks ...] [--repeats 3] [--steps 40000] [-t K=V]

``--training`` instead trains ``none`` on each task with ``-t compile=off`` and ``-t compile=learner``
(interleaved, ``--repeats`` each, the rate after a warm-up share that leaves the compile out) and prints steps/s
and CPU µs per env step by process role, plus any ``-t KEY=VALUE`` settings given to both.

For each task it builds the run's actor-critic as training does (family defaults, the small network), fills
batches with the adapter's observations under random actions, and times, eager and compiled interleaved:
inference (the whole model's forward pass on ``--inference-batch`` observations and RNN states, no gradients:
what the inference worker runs per request) and the learner's encoder pass (``forward_head`` on
``--learner-batch`` observations, forward and backward). It prints medians of ``--repeats`` timings (each over
several calls), the compiled/eager speed ratio, the compile time, and the largest difference between the two
outputs (the compiled network must compute the same function, to float noise).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any, Callable

import numpy as np
import torch


def build_model(task: str, workdir: str) -> tuple[Any, Any]:
    """(actor-critic, the env it was built for) of ``none`` on ``task`` with the family's defaults."""
    from sample_factory.algo.utils.env_info import extract_env_info
    from sample_factory.model.actor_critic import create_actor_critic

    from llmexplore.agents.run_settings import RunSettings
    from llmexplore.agents.sf_env import build_env
    from llmexplore.agents.training import build_sf_config, register_components
    from llmexplore.benchmarks.run.spec import RunSpec, resolve

    run = resolve(RunSpec(method="none", task=task, steps=8192, train={"sampling": "per-env"}))
    cfg = build_sf_config(run, workdir)
    register_components()
    env = build_env(RunSettings.from_cfg(cfg))
    info = extract_env_info(env, cfg)
    model = create_actor_critic(cfg, info.obs_space, info.action_space)
    model.eval()
    return model, env


def observations(env: Any, count: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """``count`` observations under random actions, stacked: key -> [count, ...] (sample-factory's dtypes)."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows: dict[str, list[np.ndarray]] = {key: [] for key in obs}
    for _ in range(count):
        for key, value in obs.items():
            rows[key].append(np.array(value, copy=True))
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
    return {key: torch.as_tensor(np.stack(values)) for key, values in rows.items()}


def normalized(model: Any, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The observations as the model receives them (sample-factory's normaliser, float where it divides)."""
    with torch.no_grad():
        return model.normalize_obs({key: value.clone() for key, value in obs.items()})


#: the model's outputs that are functions of its inputs (the rest are sampled)
DETERMINISTIC_OUTPUTS = ("action_logits", "values", "new_rnn_states")


def per_call(fn: Callable[[], Any], calls: int) -> float:
    """Seconds per call of fn, over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def largest_difference(a: Any, b: Any) -> float:
    """Largest absolute difference between two results (tensors, or dicts/tuples of them)."""
    if isinstance(a, torch.Tensor):
        return float((a.detach().float() - b.detach().float()).abs().max()) if a.numel() else 0.0
    if isinstance(a, dict):  # sampled actions (and their log-probabilities) differ by chance: left out
        keys = [k for k in a if k in DETERMINISTIC_OUTPUTS and isinstance(a[k], torch.Tensor)]
        return max((largest_difference(a[k], b[k]) for k in keys), default=0.0)
    return max((largest_difference(x, y) for x, y in zip(a, b)), default=0.0)


def measure(task: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as workdir:
        model, env = build_model(task, workdir)
        try:
            obs = normalized(model, observations(env, max(args.inference_batch, args.learner_batch)))
        finally:
            env.close()
    rnn_size = int(model.cfg.rnn_size) if model.cfg.use_rnn else 1
    rnn = torch.zeros(args.inference_batch, rnn_size * (2 if model.cfg.rnn_type == "lstm" else 1))
    inference_obs = {key: value[: args.inference_batch] for key, value in obs.items()}
    learner_obs = {key: value[: args.learner_batch] for key, value in obs.items()}

    def infer(net: Any) -> Callable[[], Any]:
        def run() -> Any:
            with torch.no_grad():
                return net(inference_obs, rnn)
        return run

    def learn(head: Callable[[dict[str, torch.Tensor]], torch.Tensor]) -> Callable[[], Any]:
        def run() -> Any:
            model.zero_grad(set_to_none=True)
            out = head(learner_obs)
            out.square().mean().backward()
            return out
        return run

    started = time.perf_counter()
    compiled_model = torch.compile(model, mode=args.mode, dynamic=False)
    compiled_head = torch.compile(model.forward_head, mode=args.mode, dynamic=False)
    eager_inf, compiled_inf = infer(model), infer(compiled_model)
    eager_learn, compiled_learn = learn(model.forward_head), learn(compiled_head)
    inference_difference = largest_difference(eager_inf(), compiled_inf())
    learner_difference = largest_difference(eager_learn(), compiled_learn())
    compile_seconds = time.perf_counter() - started

    rows = []
    for name, eager, compiled, calls in (
        (f"inference, batch {args.inference_batch}", eager_inf, compiled_inf, args.inference_calls),
        (f"learner encoder fwd+bwd, batch {args.learner_batch}", eager_learn, compiled_learn, args.learner_calls),
    ):
        for fn in (eager, compiled):  # warm both before timing
            per_call(fn, 2)
        eager_times, compiled_times = [], []
        for _ in range(args.repeats):  # interleaved, so a neighbour's load falls on both alike
            eager_times.append(per_call(eager, calls))
            compiled_times.append(per_call(compiled, calls))
        e, c = statistics.median(eager_times), statistics.median(compiled_times)
        rows.append((name, e, c))
    print(f"\n{task} (small network, {args.threads} thread(s), mode {args.mode}; compile + first calls "
          f"{compile_seconds:.1f} s; largest output difference: inference {inference_difference:.2e}, learner "
          f"{learner_difference:.2e})")
    print(f"{'pass':42} {'eager ms':>9} {'compiled ms':>12} {'speed-up':>9}")
    for name, e, c in rows:
        print(f"{name:42} {e * 1e3:9.2f} {c * 1e3:12.2f} {e / c:8.2f}x")


def measure_training(task: str, args: argparse.Namespace) -> None:
    """Training with the encoder eager and compiled where it trains, interleaved; medians printed."""
    import os

    from tests.perf.common import train_options, training_rate_and_cpu

    given = train_options(args.train)
    runs: dict[str, list[tuple[float, dict[str, float]]]] = {"off": [], "learner": []}
    for repeat in range(args.repeats):
        for setting in ("off", "learner") if repeat % 2 == 0 else ("learner", "off"):
            rate, cpu = training_rate_and_cpu("none", task, args.steps, train_options={**given, "compile": setting})
            runs[setting].append((rate, cpu))
            roles = ", ".join(f"{role} {us:.0f}" for role, us in cpu.items() if role != "total")
            print(f"  {task} compile={setting:7s} repeat {repeat + 1}: {rate:8,.0f} steps/s, CPU "
                  f"{cpu.get('total', 0):6.0f} us per step ({roles}), load {os.getloadavg()[0]:.2f}", flush=True)
    rate = {key: statistics.median(r for r, _ in value) for key, value in runs.items()}
    cpu = {key: statistics.median(c.get("total", 0.0) for _, c in value) for key, value in runs.items()}
    print(f"{task:24s} eager {rate['off']:8,.0f}  compiled {rate['learner']:8,.0f} steps/s  ratio "
          f"{rate['learner'] / rate['off']:.2f}x  CPU per step {cpu['off']:.0f} -> {cpu['learner']:.0f} us  (runs "
          f"{[round(r) for r, _ in runs['off']]} vs {[round(r) for r, _ in runs['learner']]}; settings {given})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["nethack:score", "crafter:reward-free"],
                        help="tasks whose family's small network is measured")
    parser.add_argument("--repeats", type=int, default=5, help="timings of each figure (medians are printed)")
    parser.add_argument("--inference-batch", type=int, default=32,
                        help="observations per inference request (one batched worker's vector env: 32)")
    parser.add_argument("--learner-batch", type=int, default=2048, help="observations per learner mini-batch")
    parser.add_argument("--inference-calls", type=int, default=50, help="calls per inference timing")
    parser.add_argument("--learner-calls", type=int, default=3, help="calls per learner timing")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (sample-factory's workers use 1)")
    parser.add_argument("--mode", default="default", choices=["default", "reduce-overhead", "max-autotune"],
                        help="torch.compile mode")
    parser.add_argument("--training", action="store_true", help="measure whole training runs instead")
    parser.add_argument("--steps", type=int, default=40_000, help="--training: env steps per run")
    parser.add_argument("-t", "--train", action="append", default=[], metavar="KEY=VALUE",
                        help="--training: a training setting for both runs (e.g. -t num_workers=2)")
    args = parser.parse_args()
    if args.training:
        if args.repeats < 1 or args.steps < 1:
            parser.error("--repeats and --steps must be >= 1")
        for task in args.tasks:
            measure_training(task, args)
        return
    if min(args.repeats, args.inference_batch, args.learner_batch, args.inference_calls, args.learner_calls,
           args.threads) < 1:
        parser.error("--repeats, the batches, the calls and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    for task in args.tasks:
        measure(task, args)


if __name__ == "__main__":
    main()
