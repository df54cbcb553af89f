"""The measured checks behind README.md's "Why PPO with reward is below the published 4.6".

Reads one finished run folder (``episodes.jsonl``, ``stats.jsonl``, sample-factory's summaries and
last checkpoint; nothing is written) and prints: the score under both budget accountings and per
quarter of the budget, the learner's statistics per 100k steps, the parameter counts of our
network and of the published baseline's network (stable-baselines3's ``CnnPolicy`` on 64x64x3),
and, with ``--random-episodes N``, a random agent on our Crafter beside Crafter's published
random-agent success rates (a check that the game has not drifted since the scoreboard).

    python results/crafter-1m/check_ppo_gap.py ~/crafter-1m/runs/none/crafter-reward/seed0 \
        --random-episodes 1200 --random-seed 2
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from llmexplore.envs.crafter import stats as crafter_stats

BUDGET = 1_000_000
LEARNER_TAGS = ("entropy", "kl_divergence", "fraction_clipped", "num_sgd_steps", "returns_running_std",
                "value_loss", "grad_norm")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _score(episodes: list[dict]) -> float:
    return crafter_stats.score_from_rates(crafter_stats.success_rates(episodes))


def accounting(run: Path) -> None:
    """Score with Crafter's clock (running sum of lengths) and ours (learner's env steps), per quarter."""
    episodes = _rows(run / "episodes.jsonl")
    by_length = crafter_stats.within_budget_by_length(_rows(run / "stats.jsonl"), BUDGET)
    by_steps = crafter_stats.episodes_within_budget(episodes, BUDGET)
    print(f"episodes {len(episodes)}, sum of lengths {sum(e['length'] for e in episodes):,}")
    print(f"score, Crafter's clock (sum of lengths): {_score(by_length):.3f} over {len(by_length)} episodes")
    print(f"score, learner's env steps:              {_score(by_steps):.3f} over {len(by_steps)} episodes")
    clock = np.cumsum([e["length"] for e in episodes])
    for start in range(0, BUDGET, BUDGET // 4):
        part = [e for e, c in zip(episodes, clock) if start < c <= start + BUDGET // 4]
        print(f"  {start // 1000:>4}k-{(start + BUDGET // 4) // 1000}k: score {_score(part):.2f}, "
              f"{len(part)} episodes, mean length {np.mean([e['length'] for e in part]):.0f}, "
              f"return {np.mean([e['return'] for e in part]):.2f}")


def learner_statistics(run: Path, window: int = 100_000) -> None:
    """Means of sample-factory's training scalars per window of env steps."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    # every session's file (a resumed run has one per session); our own file's tags are not train/*
    events = EventAccumulator(str(run / "sf" / ".summary" / "0"), size_guidance={"scalars": 0})
    events.Reload()
    logged = set(events.Tags()["scalars"])
    # a tag the run's settings do not log (returns_running_std without return normalisation) stays empty
    series = {tag: events.Scalars(f"train/{tag}") if f"train/{tag}" in logged else [] for tag in LEARNER_TAGS}
    print(f"learner, means per {window // 1000}k steps (uniform policy entropy: ln 17 = {math.log(17):.3f})")
    print("  steps     " + " ".join(f"{tag[:14]:>14}" for tag in LEARNER_TAGS))
    for start in range(0, BUDGET, window):
        means = [np.mean([s.value for s in series[t] if start <= s.step < start + window] or [np.nan])
                 for t in LEARNER_TAGS]
        print(f"  {start // 1000:>4}k     " + " ".join(f"{m:14.4g}" for m in means))


def parameters(run: Path) -> None:
    """Trainable parameters of our policy (last checkpoint) and of SB3's CnnPolicy on Crafter."""
    import torch
    from torch import nn

    checkpoint = sorted((run / "sf" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    model = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]
    parts: dict[str, int] = {}
    for key, value in model.items():
        if not key.startswith("returns_normalizer"):
            part = ".".join(key.split(".")[:2])
            parts[part] = parts.get(part, 0) + value.numel()
    print(f"ours ({checkpoint.name}): {sum(parts.values()):,} {parts}")
    # the DQN-paper CNN with a 512-unit layer, then linear policy and value heads (SB3's CnnPolicy defaults)
    convs = (nn.Conv2d(3, 32, 8, 4), nn.Conv2d(32, 64, 4, 2), nn.Conv2d(64, 64, 3, 1))
    cnn = nn.Sequential(*convs, nn.Flatten())
    flat = cnn(torch.zeros(1, 3, 64, 64)).shape[1]
    heads = nn.ModuleList([nn.Linear(flat, 512), nn.Linear(512, 17), nn.Linear(512, 1)])
    count = sum(p.numel() for m in (cnn, heads) for p in m.parameters())
    print(f"published (NatureCNN, {flat} -> 512, heads 17 + 1): {count:,}")


def random_parity(episodes: int, seed: int = 0) -> None:
    """A uniformly random agent on our Crafter beside Crafter's published random agent."""
    from llmexplore.envs.base import EPISODE_STATS_KEY
    from llmexplore.envs.crafter.adapter import CrafterEnv
    from llmexplore.envs.crafter.reference import reference_scores

    env, rng, rows = CrafterEnv(reward=True), np.random.default_rng(seed), []
    env.reset(seed=seed)
    while len(rows) < episodes:
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            rows.append(info[EPISODE_STATS_KEY])
            env.reset()
    ours = crafter_stats.success_rates(rows)
    published = reference_scores()["agents"]["random"]
    theirs = np.array([published["success_rates"][a] for a in crafter_stats.ACHIEVEMENTS])
    score, length = crafter_stats.score_from_rates(ours), np.mean([r["length"] for r in rows])
    print(f"random agent, {episodes} episodes: score {score:.2f} (published {published['score_mean']:.2f}), "
          f"mean length {length:.1f}; z = difference / binomial standard error of {episodes} episodes")
    for name, a, b in zip(crafter_stats.ACHIEVEMENTS, ours, theirs):
        if a or b:
            error = 100 * math.sqrt(max(b / 100 * (1 - b / 100), 1e-9) / episodes)
            print(f"  {name:<20} ours {a:5.1f}  published {b:5.1f}  z {(a - b) / error:+5.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished none/crafter:reward run folder")
    parser.add_argument("--random-episodes", type=int, default=0,
                        help="also run the random-agent parity check")
    parser.add_argument("--random-seed", type=int, default=0, help="world and action seed of that check")
    args = parser.parse_args()
    accounting(args.run)
    learner_statistics(args.run)
    parameters(args.run)
    if args.random_episodes:
        random_parity(args.random_episodes, args.random_seed)


if __name__ == "__main__":
    main()
