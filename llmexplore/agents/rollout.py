"""Play one episode with a loaded policy and score it with the run's intrinsic reward.

Every episode is fixed by its evaluation seed alone: the env is seeded from it (through
the adapter's ``seed_episodes``), sampled actions draw from a generator seeded with it, and
the network runs on one thread. So an episode replays identically whichever worker process
plays it and whatever else that process played before.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import gymnasium as gym
import numpy as np
import torch

from llmexplore.agents.policy import Policy
from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.errors import ConfigError
from llmexplore.methods import IntrinsicReward, RewardBatch

#: Evaluation seeds live in their own range: env seed = EVAL_SEED_OFFSET + evaluation seed.
#: Training seeds env i of run seed s with s * 1_000_003 + i, far below this, so an
#: evaluation never replays a world the agent trained on.
EVAL_SEED_OFFSET = 1 << 40
#: transitions scored by the intrinsic reward in one call (bounds memory on long episodes)
REWARD_CHUNK = 1024


def env_seed(seed: int) -> int:
    """The env seed of an evaluation seed: past every training seed, so no training world is replayed."""
    return EVAL_SEED_OFFSET + int(seed)


@dataclass
class EpisodeTrace:
    """What happened in one episode. Observations have one more row than actions:
    ``observations[k][t + 1]`` is what action t led to (and earned ``rewards[t]``)."""

    seed: int
    actions: np.ndarray
    rewards: np.ndarray
    observations: dict[str, np.ndarray]
    extras: dict[str, np.ndarray]
    stats: dict[str, Any]
    terminated: bool
    truncated: bool
    intrinsic: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))

    @property
    def length(self) -> int:
        """Steps the episode took: one per action (``observations`` hold one row more)."""
        return int(len(self.actions))


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One intra-op thread: exact replays, and no thread fights on a shared CPU
    (with several threads on a busy 2-core machine a step took 20x longer)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def require_replayable(policy: Policy) -> None:
    """Replaying an episode needs the env's ``seed_episodes``; say so before any work."""
    if not policy.replayable:
        _not_replayable(policy.settings.run.task)


def check_seedable(env: gym.Env) -> None:
    """Raise ConfigError unless the adapter has ``seed_episodes``: without it no episode can be replayed."""
    if not callable(getattr(env.unwrapped, "seed_episodes", None)):
        _not_replayable(type(env.unwrapped).__name__)


def _not_replayable(what: str) -> None:
    raise ConfigError(f"environment of {what} cannot replay episodes: it has no seed_episodes(seed), "
                      f"which evaluation and visualization need",
                      hint="add seed_episodes to the environment adapter (see the NetHack and Crafter envs)")


def seed_env(env: gym.Env, seed: int) -> None:
    """Make the env's next episode the one of this evaluation seed."""
    check_seedable(env)
    env.unwrapped.seed_episodes(env_seed(seed))


def play_episode(policy: Policy, env: gym.Env, seed: int, *, greedy: bool,
                 extra_keys: Sequence[str] = ()) -> EpisodeTrace:
    """Roll the policy out for one episode of ``env`` (built by ``policy.make_env``)."""
    seed_env(env, seed)
    actor = policy.actor(greedy=greedy, seed=env_seed(seed))
    keys, extra_keys = policy.obs_keys, tuple(extra_keys)
    obs, _ = env.reset()
    frames: dict[str, list[np.ndarray]] = {k: [np.array(obs[k])] for k in keys + extra_keys}
    actions: list[int] = []
    rewards: list[float] = []
    with single_thread():
        while True:
            action = actor.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            actions.append(action)
            rewards.append(float(reward))
            for k in frames:
                frames[k].append(np.array(obs[k]))
            if terminated or truncated:
                break
    return EpisodeTrace(
        seed=int(seed),
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float64),
        observations={k: np.stack(frames[k]) for k in keys},
        extras={k: np.stack(frames[k]) for k in extra_keys},
        stats=dict(info.get(EPISODE_STATS_KEY) or {}),
        terminated=bool(terminated),
        truncated=bool(truncated),
    )


@torch.no_grad()
def intrinsic_rewards(method: IntrinsicReward, trace: EpisodeTrace, space: gym.spaces.Dict,
                      chunk: int = REWARD_CHUNK) -> np.ndarray:
    """The method's reward for each transition [T], fed as the learner would see it.

    The episode goes in as one trajectory row, in chunks of ``chunk`` transitions that
    overlap by one observation; the last transition is marked as ending the episode.
    """
    steps = trace.length
    out = np.zeros(steps, dtype=np.float64)
    with single_thread():
        for start in range(0, steps, chunk):
            end = min(start + chunk, steps)
            obs = {k: torch.as_tensor(_as_space_dtype(v[start : end + 1], space.spaces.get(k)))[None]
                   for k, v in trace.observations.items()}
            dones = torch.zeros(1, end - start)
            if end == steps:
                dones[0, -1] = 1.0
            batch = RewardBatch(obs=obs, actions=torch.as_tensor(trace.actions[start:end])[None], dones=dones)
            out[start:end] = method.reward(batch).reshape(-1).double().cpu().numpy()
    return out


def _as_space_dtype(values: np.ndarray, space: gym.spaces.Space | None) -> np.ndarray:
    """Training buffers hold each key in its space's dtype; give the method the same."""
    dtype = getattr(space, "dtype", None)
    return values if dtype is None else np.ascontiguousarray(values, dtype=dtype)


def episode_row(trace: EpisodeTrace) -> dict[str, Any]:
    """The per-episode result kept in evaluation records."""
    return {
        "seed": trace.seed,
        "env_seed": env_seed(trace.seed),
        "length": trace.length,
        "return": float(trace.rewards.sum()),
        "intrinsic_return": float(trace.intrinsic.sum()),
        "terminated": trace.terminated,
        "truncated": trace.truncated,
        "stats": {k: _plain(v) for k, v in trace.stats.items()},
    }


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def score_episode(method: IntrinsicReward, policy: Policy, trace: EpisodeTrace) -> EpisodeTrace:
    """Fill ``trace.intrinsic`` with the method's reward per step, [T] float64; returns the same trace."""
    trace.intrinsic = intrinsic_rewards(method, trace, policy.observation_space)
    return trace


def stats_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Episode stats as the adapter's ``summarize`` reads them."""
    return [dict(r["stats"]) for r in rows]
