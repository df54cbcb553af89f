"""Collect a pair dataset by rolling out a policy in a task whose family offers text to judge.

Motif's dataset is pairs of *single* observations drawn from many trajectories. We step
``num_envs`` environments in lock-step in one process (the policy sees a batch, which a
trained recurrent policy needs), keep every observation of a running game, and put the
k-th kept observation at a random slot of the (N, 2) pair arrays: every observation is
used once, pairs mix episodes and time, and memory holds one copy of the data.

The policy is a seam (``CollectionPolicy``): it builds the envs it acts in, so a trained
checkpoint gets its run's method wrappers (``CheckpointPolicy`` in ``checkpoint_policy.py``);
the uniform random policy lives here. ``collection.json`` in the dataset records the task,
seed and policy (for a checkpoint: run, file, sha256, env steps).

What is kept comes from the task's family (``EnvFamily.message_text``, ``methods/message_text.py``):
``message`` (NetHack's message; Crafter's caption, written by the family's wrapper) and the family's
data keys beside it (NetHack: bottom-line stats and terminal; Crafter: what its caption is made from),
only observations of a game in progress, and the family's ``info/`` figures (NetHack: score, depth, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

import gymnasium as gym
import numpy as np

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.family import MessageSource
from llmexplore.errors import ConfigError
from llmexplore.methods.message_text import MESSAGE_KEY, message_source
from llmexplore.methods.motif.dataset import PairDataset, write_pair_dataset
from llmexplore.methods.motif.folder_lock import folder_writer

_SEED_STRIDE = 1_000_003


class CollectionPolicy(Protocol):
    """Chooses actions for a batch of environments it built itself."""

    #: the task its envs play
    task: str
    #: observation keys ``act`` reads (only these are batched for it)
    obs_keys: tuple[str, ...]

    def make_env(self, extra_keys: tuple[str, ...]) -> gym.Env:
        """One env as this policy expects it (wrappers included), with the extra adapter keys."""

    def reset(self, num_envs: int) -> None:
        """Called once before the first ``act``, with how many envs it will act for (all starting an episode)."""
        ...

    def act(self, obs: Mapping[str, np.ndarray], dones: np.ndarray) -> np.ndarray:
        """obs: batched observations (num_envs, ...); dones: which envs just started a new episode."""

    def describe(self) -> dict[str, Any]:
        """Where the actions come from, for the dataset's collection.json."""


class RandomPolicy:
    """Uniform random actions in the task's plain adapter env."""

    obs_keys: tuple[str, ...] = ()

    def __init__(self, task: str, seed: int = 0):
        self.task = task
        self.adapter = make_adapter(get_task(task))
        self.rng = np.random.default_rng(seed)
        self.num_envs = 0
        self.num_actions = 0

    def make_env(self, extra_keys: tuple[str, ...]) -> gym.Env:
        """The task's plain adapter env with the extra adapter keys; notes its action count for ``act``."""
        env = self.adapter.make_env(extra_keys=extra_keys)
        self.num_actions = int(env.action_space.n)
        return env

    def reset(self, num_envs: int) -> None:
        """Remember how many envs ``act`` draws actions for."""
        self.num_envs = num_envs

    def act(self, obs: Mapping[str, np.ndarray], dones: np.ndarray) -> np.ndarray:
        """Uniform random actions (num_envs,) int64; the observations are not read."""
        return self.rng.integers(self.num_actions, size=self.num_envs)

    def describe(self) -> dict[str, Any]:
        """Only the kind, ``random``, for collection.json."""
        return {"kind": "random"}


@dataclass
class CollectStats:
    steps: int
    kept: int
    episodes: int


def collect_pairs(task: str, pairs: int, out: str | Path, seed: int = 0, num_envs: int = 16,
                  policy: CollectionPolicy | None = None,
                  progress: Callable[[int, int], None] | None = None) -> tuple[PairDataset, CollectStats]:
    """Roll out ``policy`` (default: uniform random) until 2 x ``pairs`` observations are kept.

    The output folder is held from before the rollouts until the dataset is in place
    (``folder_writer``): a second collection into it is refused at once, naming the first."""
    spec = get_task(task)
    source = message_source(spec, "motif")  # a task offering no text to judge is refused here
    if pairs < 1:
        raise ConfigError(f"--pairs must be at least 1 (got {pairs})")
    if num_envs < 1:
        raise ConfigError(f"--envs must be at least 1 (got {num_envs})")
    out = Path(out)
    _check_out(out)  # before the lock too: a finished dataset is named as such, not as a lock's holder
    policy = policy or RandomPolicy(spec.name, seed)
    if policy.task != spec.name:
        raise ConfigError(f"the collection policy plays '{policy.task}', but the dataset is for '{spec.name}'")
    with folder_writer(out, "motif collect"):
        _check_out(out)  # a collection that held the folder until just now may have filled it
        data, stats = _roll_out(policy, source, 2 * pairs, seed, num_envs, progress)
        arrays = {k: v.reshape(pairs, 2, *v.shape[1:]) for k, v in data.items()}
        info = source.info(arrays)
        meta = {"task": spec.name, "pairs": pairs, "seed": seed, "envs": num_envs, "env_steps": stats.steps,
                "episodes": stats.episodes, "policy": policy.describe()}
        dataset = write_pair_dataset(out, arrays, info, meta=meta)
    return dataset, stats


def _check_out(out: Path) -> None:
    """Refuse an output folder that holds a dataset or anything else."""
    if (out / "data").exists():
        raise ConfigError(f"{out} already holds a pair dataset", hint="choose another --out or delete it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and is not an empty folder", hint="choose another --out")


def _roll_out(policy: CollectionPolicy, source: MessageSource, total: int, seed: int, num_envs: int,
              progress: Callable[[int, int], None] | None) -> tuple[dict[str, np.ndarray], CollectStats]:
    """Step ``num_envs`` envs in lock-step until ``total`` observations are kept, each at its random slot."""
    envs: list[gym.Env] = []
    kept = steps = episodes = 0
    keys = (MESSAGE_KEY, *source.data_keys)
    try:
        for i in range(num_envs):
            envs.append(source.wrap(policy.make_env(extra_keys=source.extra_keys)))
            envs[-1].unwrapped.seed_episodes(seed * _SEED_STRIDE + i)
        space = envs[0].observation_space
        data = {k: np.zeros((total, *space[k].shape), dtype=_dtype(k, space[k].dtype)) for k in keys}
        slots = np.random.default_rng([seed, 1]).permutation(total)  # kept observation k -> flat slot
        policy.reset(num_envs)
        obs = [env.reset()[0] for env in envs]
        dones = np.ones(num_envs, dtype=bool)
        while kept < total:
            for o in obs:
                if kept == total:
                    break
                if not source.playing(o):  # e.g. NetHack's game-over screen, which shows no game state
                    continue
                slot = slots[kept]
                for key in keys:
                    data[key][slot] = o[key]
                kept += 1
            if kept == total:
                break
            actions = policy.act(_stack(obs, policy.obs_keys), dones)
            for i, env in enumerate(envs):
                o, _, terminated, truncated, _ = env.step(int(actions[i]))
                dones[i] = terminated or truncated
                if dones[i]:
                    episodes += 1
                    o = env.reset()[0]
                obs[i] = o
            steps += num_envs
            if progress is not None:
                progress(kept, total)
    finally:
        for env in envs:
            env.close()
    return data, CollectStats(steps=steps, kept=kept, episodes=episodes)


def _dtype(key: str, dtype: np.dtype) -> np.dtype:
    # blstats: NLE's integers, stored as such (our env hands them out as float32)
    return np.dtype(np.int64) if key == "blstats" else np.dtype(dtype)


def _stack(obs: list[dict[str, np.ndarray]], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.stack([o[k] for o in obs]) for k in keys}
