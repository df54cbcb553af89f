"""ELLM's cost on reward-free Crafter: actor-side wrapper speed and training speed against `none`.

    PYTHONPATH=. python tests/perf/bench_ellm.py [--train-steps 40000] [--repeats 3]

Target (2-core CPU): training with `ellm` (oracle LM, fresh LM cache per run) at >= 70% of
`none`'s env steps/s. Runs of the two methods alternate so machine noise hits both alike;
medians and the ratio come from the same invocation. Training rates are steady state (after
the first quarter of the budget; start-up and model loading excluded).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch

from tests.perf.common import random_action_rate, training_rate


def wrapper_rate(steps: int, ellm: bool, seed: int = 0) -> tuple[float, dict]:
    """Env steps/s of the Crafter adapter with random actions, with or without ELLM's wrapper."""
    from llmexplore.envs import get_task, make_adapter
    from llmexplore.methods import MethodContext, get_method, parse_options

    env = make_adapter("crafter:reward-free").make_env()
    info: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        if ellm:
            method = get_method("ellm")
            context = MethodContext(task=get_task("crafter:reward-free"), seed=seed, run_dir=Path(tmp))
            env = method.wrap_env(env, parse_options(method, {}), context)
        env.reset(seed=seed)
        rate = random_action_rate(env, steps, seed=seed, close=False)
        if ellm:
            info = {"lm_questions": env.suggester.asked, "texts_encoded_in_process": env.embedder.encoded}
    return rate, info


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-steps", type=int, default=5000, help="random-action steps per wrapper measurement")
    parser.add_argument("--train-steps", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)

    print(f"# Crafter adapter with random actions, {args.env_steps} steps, median of {args.repeats}")
    raw, wrapped, infos = [], [], []
    for i in range(args.repeats):
        raw.append(wrapper_rate(args.env_steps, ellm=False, seed=i)[0])
        rate, info = wrapper_rate(args.env_steps, ellm=True, seed=i)
        wrapped.append(rate)
        infos.append(info)
    r, w = statistics.median(raw), statistics.median(wrapped)
    print(f"adapter        {r:8,.0f} steps/s  (runs {[round(x) for x in raw]})")
    print(f"adapter+ELLM   {w:8,.0f} steps/s  (runs {[round(x) for x in wrapped]}; per run {infos})")
    print(f"wrapper cost   {100 * (1 - w / r):.0f}% of adapter time (includes the first-time LM questions "
          f"and embeddings of a fresh process)")

    if args.skip_training:
        return
    print(f"\n# training on crafter:reward-free, {args.train_steps} env steps, steady state, median of {args.repeats}")
    rates: dict[str, list[float]] = {"none": [], "ellm": []}
    for i in range(args.repeats):
        for method in ("none", "ellm"):  # alternate: noise on a shared machine hits both alike
            rates[method].append(training_rate(method, "crafter:reward-free", args.train_steps, seed=i))
    medians = {m: statistics.median(v) for m, v in rates.items()}
    for method, values in rates.items():
        print(f"{method:5s} {medians[method]:8,.0f} env steps/s  (runs {[round(x) for x in values]})")
    ratio = medians["ellm"] / medians["none"]
    print(f"ellm/none = {ratio:.2f} (target >= 0.70: {'met' if ratio >= 0.70 else 'NOT met'})")


if __name__ == "__main__":
    main()
