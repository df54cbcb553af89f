"""The measured check behind docs/METHODS.md's E3B section, "What the bonus pays for on Crafter".

Plays episodes on Crafter, with a run's policy (actions sampled) or uniformly random actions, and scores
every transition with the E3B embedding φ and running standard deviation of an E3B run's checkpoint
(nothing is written). Prints what the episodes did (length, share of steps asleep, share of sleep and move
actions, the step of the first fall asleep) and where the raw bonus went: the share of each episode's bonus
paid on falling asleep (and on the first fall asleep alone), and the mean raw and paid (raw / running
std) bonus by kind of transition.

    python results/crafter-1m/check_e3b_bonus.py RUN_DIR --episodes 12 --actions policy
    python results/crafter-1m/check_e3b_bonus.py RUN_DIR --episodes 12 --actions random
    python results/crafter-1m/check_e3b_bonus.py NONE_RUN_DIR --scorer E3B_RUN_DIR --episodes 12
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from llmexplore.agents.policy import Policy, load_policy
from llmexplore.envs.base import ENV_UID_KEY


def play(policy: Policy, seed: int, random_actions: bool, rng: np.random.Generator) -> dict[str, Any]:
    """One episode: observations [T+1], actions [T], and whether the player slept after each step."""
    env = policy.make_env()
    crafter = env.unwrapped.crafter
    obs, _ = env.reset(seed=seed)
    actor = policy.actor(greedy=False, seed=seed)
    frames, actions, asleep, done = [obs], [], [False], False
    while not done:
        action = int(rng.integers(env.action_space.n)) if random_actions else actor.act(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
        frames.append(obs)
        actions.append(action)
        asleep.append(bool(crafter._player.sleeping))
    env.close()
    return {"frames": frames, "actions": actions, "asleep": asleep}


def bonuses(e3b: Any, frames: list[dict[str, np.ndarray]]) -> np.ndarray:
    """Raw bonus of each transition of one episode, [T], from a fresh ellipse (E3B's own code path)."""
    keys = [k for k in frames[0] if k != ENV_UID_KEY]
    with torch.no_grad():
        phi = e3b.model.embed({k: torch.as_tensor(np.stack([f[k] for f in frames])) for k in keys})
    dones = torch.zeros(1, len(frames) - 1, dtype=torch.bool)
    return e3b._episode_bonuses(phi.to(e3b.dtype)[None], dones, None)[0].cpu().numpy()


def kind_of(names: list[str], action: int, before: bool, after: bool) -> str:
    """What a transition did: fell asleep, woke up, stayed asleep, or the awake action's kind."""
    if after != before:
        return "falls asleep" if after else "wakes up"
    if after:
        return "asleep"
    name = names[action]
    if name.startswith("move_"):
        return "awake: move"
    return f"awake: {name}" if name in ("noop", "do", "sleep") else "awake: other"


def report(args: argparse.Namespace) -> None:
    """Play, score and print."""
    torch.set_num_threads(1)
    policy = load_policy(args.run, args.checkpoint)
    scorer = load_policy(args.scorer, args.checkpoint) if args.scorer else policy
    e3b = scorer.make_method()
    std = float(e3b.bonus_stats.std)
    names = policy.action_names
    rng = np.random.default_rng(args.seed)
    by_kind: dict[str, list[float]] = defaultdict(list)
    rows = []
    for episode in range(args.episodes):
        played = play(policy, args.seed * 1000 + episode, args.actions == "random", rng)
        paid, asleep, actions = bonuses(e3b, played["frames"]), played["asleep"], played["actions"]
        onsets = [t for t in range(len(actions)) if asleep[t + 1] and not asleep[t]]
        for t, action in enumerate(actions):
            by_kind[kind_of(names, action, asleep[t], asleep[t + 1])].append(float(paid[t]))
        rows.append({"length": len(actions), "asleep": np.mean(asleep[1:]),
                     "sleep actions": np.mean([names[a] == "sleep" for a in actions]),
                     "move actions": np.mean([names[a].startswith("move_") for a in actions]),
                     "first fall asleep": onsets[0] if onsets else np.nan,
                     "bonus share of falling asleep": paid[onsets].sum() / max(paid.sum(), 1e-12),
                     "of which the first": paid[onsets[:1]].sum() / max(paid.sum(), 1e-12)})
    print(f"{args.run} ({policy.checkpoint.path.name}), {args.actions} actions, {args.episodes} episodes; "
          f"bonus of {scorer.checkpoint.path.name} (running std {std:.3g})")
    print("  " + ", ".join(f"{k} {np.nanmean([r[k] for r in rows]):.3g}" for k in rows[0]))
    for kind in sorted(by_kind, key=lambda k: -np.mean(by_kind[k])):
        values = np.array(by_kind[kind])
        print(f"    {kind:14s} n {len(values):6d}  mean raw {values.mean():9.3g}"
              f"  median {np.median(values):8.3g}  mean paid {values.mean() / std:7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="run directory whose policy plays (with --actions policy)")
    parser.add_argument("--scorer",
                        help="E3B run directory whose φ and running std score the steps (default: run)")
    parser.add_argument("--checkpoint", default="latest", help="latest, best or a .pth file, for both runs")
    parser.add_argument("--episodes", type=int, default=12, help="episodes to play (1 or more)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the worlds and of the action sampling")
    parser.add_argument("--actions", choices=("policy", "random"), default="policy",
                        help="the run's policy, sampled, or uniformly random actions")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error("--episodes must be 1 or more")
    report(args)


if __name__ == "__main__":
    main()
