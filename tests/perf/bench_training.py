"""Env steps/s of the raw simulators, our adapters, and full training with `none` and `rnd`.

    PYTHONPATH=. python tests/perf/bench_training.py [--repeats 5] [--modes serial workers2]

Targets (2-core CPU): adapter overhead <= 10% of raw env speed; training with `none` on
NetHack >= 2,000 env steps/s with the default network; `rnd` costs <= 25% of `none`'s speed.

Training is measured in two modes, both with the default network: ``serial`` (the default
settings: sampling and learning take turns in one process, which suits grids that run one
cell per core) and ``workers2`` (``--train num_workers=2``: two rollout worker processes and
the learner run at once, which suits a lone run on a 2-core machine).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tests.perf.common import adapter_rate, median_rate, random_action_rate, training_rate

#: training settings compared (the network is the default in both)
MODES: dict[str, dict] = {"serial": {}, "workers2": {"num_workers": 2}}


def nethack_raw(steps: int) -> float:
    from nle.env.tasks import NetHackScore

    env = NetHackScore(observation_keys=("message", "blstats", "chars"))
    env.reset()
    return random_action_rate(env, steps)


def nethack_adapter(steps: int) -> float:
    return adapter_rate("nethack:score", steps)


def crafter_raw(steps: int) -> float:
    import crafter

    env = crafter.Env(seed=0)
    env.reset()
    actions = np.random.default_rng(0).integers(0, 17, steps)
    t = time.perf_counter()
    for a in actions:
        _, _, done, _ = env.step(int(a))
        if done:
            env.reset()
    return steps / (time.perf_counter() - t)


def crafter_adapter(steps: int) -> float:
    return adapter_rate("crafter:reward-free", steps)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--nethack-env-steps", type=int, default=20000)
    parser.add_argument("--crafter-env-steps", type=int, default=3000)
    parser.add_argument("--nethack-train-steps", type=int, default=200_000)
    parser.add_argument("--crafter-train-steps", type=int, default=40_000)
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["serial", "workers2"])
    parser.add_argument("--train-repeats", type=int, default=3)
    args = parser.parse_args()

    print(f"# environment speed (random actions), median of {args.repeats}")
    for name, raw, ours, steps in (("nethack:score", nethack_raw, nethack_adapter, args.nethack_env_steps),
                                   ("crafter:reward-free", crafter_raw, crafter_adapter, args.crafter_env_steps)):
        # interleave raw and adapter runs so machine noise hits both alike
        raws, adapters = [], []
        for _ in range(args.repeats):
            raws.append(raw(steps))
            adapters.append(ours(steps))
        r, a = float(np.median(raws)), float(np.median(adapters))
        print(f"{name:22s} raw {r:9,.0f} steps/s   adapter {a:9,.0f} steps/s   overhead {100 * (1 - a / r):5.1f}%"
              f"   (raw runs {[round(x) for x in raws]}, adapter runs {[round(x) for x in adapters]})")

    if args.skip_training:
        return
    print(f"\n# training speed (steady state, after the first quarter of the budget), median of {args.train_repeats}")
    for mode in args.modes:
        for task, steps in (("nethack:score", args.nethack_train_steps),
                            ("crafter:reward-free", args.crafter_train_steps)):
            rates = {}
            for method in ("none", "rnd"):
                rates[method], runs = median_rate(
                    lambda: training_rate(method, task, steps, train_options=MODES[mode]), args.train_repeats)
                print(f"{mode:9s} {task:22s} {method:5s} {rates[method]:8,.0f} env steps/s  "
                      f"(runs {[round(x) for x in runs]})")
            print(f"{mode:9s} {task:22s} rnd/none = {rates['rnd'] / rates['none']:.2f} "
                  f"(cost {100 * (1 - rates['rnd'] / rates['none']):.0f}%)")


if __name__ == "__main__":
    main()
