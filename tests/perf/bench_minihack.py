"""MiniHack: the adapter against the raw MiniHack env, training speed beside NetHack's, and the
success rate of a uniformly random policy per task (the normalisation's 0).

    PYTHONPATH=. python tests/perf/bench_minihack.py [--repeats 5] [--steps 20000] [--train-steps 40000]
    PYTHONPATH=. python tests/perf/bench_minihack.py --random 200     # RANDOM_SUCCESS in family.py
    PYTHONPATH=. python tests/perf/bench_minihack.py --levels --steps 5000 [--repeats 5]

``--levels``: MultiRoom's resets with MiniHack's own level patcher (its shell script) against
``envs/minihack/level_patch.py``, interleaved in one run: milliseconds per reset, and the adapter's steps/s
under random actions (resets included) on multiroom-n2, with medians and their ratio.

Targets (2-core CPU): the adapter within 5% of the raw env (same keys asked of MiniHack, same
seeded episodes, same actions); `none` training steps/s printed beside NetHack Score's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tests.perf.common import adapter_rate, median_rate, random_action_rate, training_rate

ADAPTER_TASKS = ("minihack:keyroom-s15", "minihack:river")


def _episode_seeds(seed: int, episode: int) -> tuple[int, int]:
    core, disp = np.random.SeedSequence([seed, episode]).generate_state(2, np.uint64)
    return int(core) >> 1, int(disp) >> 1


def raw_rate(task: str, steps: int) -> float:
    """The MiniHack env as our adapter builds it, stepped bare: no observation building, no stats."""
    from nle.env.base import NLE

    from llmexplore.envs import get_task
    from llmexplore.envs.minihack.adapter import BASE_KEYS, make_minihack

    opts = get_task(task).options
    env = make_minihack(opts["env_id"], observation_keys=BASE_KEYS, max_episode_steps=opts["max_episode_steps"])
    episode = 0
    NLE.seed(env, *_episode_seeds(0, episode), reseed=False)
    env.reset()
    actions = np.random.default_rng(0).integers(0, env.action_space.n, steps)
    t = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            episode += 1
            NLE.seed(env, *_episode_seeds(0, episode), reseed=False)
            env.reset()
    rate = steps / (time.perf_counter() - t)
    env.close()
    return rate


def random_success(task: str, episodes: int, seed: int = 0) -> tuple[float, float]:
    """Share of ``episodes`` seeded episodes a uniformly random policy ends at the goal, and its s.e."""
    from llmexplore.envs import EPISODE_STATS_KEY, make_adapter

    env = make_adapter(task).make_env()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    wins = []
    while len(wins) < episodes:
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            wins.append(info[EPISODE_STATS_KEY]["success"])
            env.reset()
    env.close()
    p = float(np.mean(wins))
    return p, float(np.sqrt(p * (1 - p) / episodes))


def level_patch_rates(steps: int, own_script: bool) -> tuple[float, float]:
    """(ms per MultiRoom reset, adapter steps/s with random actions and its resets) with MiniHack's own
    level patcher (``own_script``) or ``level_patch``; the same seeded episodes either way."""
    from llmexplore.envs import make_adapter

    env = make_adapter("minihack:multiroom-n2").make_env(seed=0)
    if own_script:
        del env.minihack._patch_nhdat  # the class's method again: MiniHack's shell script
    env.reset()
    t = time.perf_counter()
    for _ in range(20):
        env.reset()
    per_reset = (time.perf_counter() - t) / 20 * 1e3
    return per_reset, random_action_rate(env, steps)


def compare_level_patchers(repeats: int, steps: int) -> None:
    """Both patchers interleaved ``repeats`` times; medians and the ratio."""
    found: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(repeats):
        for own_script in (True, False):
            found[own_script].append(level_patch_rates(steps, own_script))
    (script_ms, script_rate), (ours_ms, ours_rate) = ([float(np.median([r[i] for r in found[k]])) for i in (0, 1)]
                                                      for k in (True, False))
    print(f"multiroom-n2 reset: MiniHack's script {script_ms:.1f} ms, level_patch {ours_ms:.1f} ms "
          f"({script_ms / ours_ms:.2f}x faster); random-action steps/s with resets: {script_rate:.0f} -> "
          f"{ours_rate:.0f} ({ours_rate / script_rate:.2f}x); medians of {repeats}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats; medians are reported")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per env-speed measurement")
    parser.add_argument("--train-steps", type=int, default=40_000, help="budget of each training-speed run")
    parser.add_argument("--random", type=int, default=0, metavar="EPISODES",
                        help="only measure the random policy's success rate per task over this many episodes")
    parser.add_argument("--tasks", nargs="*", default=None, help="with --random: these tasks only (default: all)")
    parser.add_argument("--levels", action="store_true",
                        help="only compare MiniHack's level patcher with level_patch on MultiRoom (resets)")
    args = parser.parse_args()
    if args.levels:
        compare_level_patchers(args.repeats, args.steps)
        return
    if args.random:
        from llmexplore.envs import list_tasks

        for spec in list_tasks():
            if spec.family == "minihack" and (not args.tasks or spec.name in args.tasks):
                p, se = random_success(spec.name, args.random)
                print(f"{spec.name:28s} random success {p:.3f} ± {se:.3f} (s.e., {args.random} episodes)", flush=True)
        return
    for task in ADAPTER_TASKS:
        raws, adapted = [], []
        for _ in range(args.repeats):  # interleaved, so machine load hits both alike
            raws.append(raw_rate(task, args.steps))
            adapted.append(adapter_rate(task, args.steps))
        raw, ours = float(np.median(raws)), float(np.median(adapted))
        print(f"{task:24s} raw {raw:8.0f} steps/s  adapter {ours:8.0f} steps/s  overhead {1 - ours / raw:+.1%} "
              f"(target <= 5%)", flush=True)
    for task in ("minihack:keyroom-s15", "nethack:score"):
        rate, rates = median_rate(lambda: training_rate("none", task, args.train_steps), max(1, args.repeats // 2))
        print(f"training none on {task:22s} {rate:7.0f} env steps/s (median of {[round(r) for r in rates]})",
              flush=True)


if __name__ == "__main__":
    main()
