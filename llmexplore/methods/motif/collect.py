"""Collect a pair dataset by rolling out a policy in a NetHack task (NLE or MiniHack).

Motif's dataset is pairs of *single* observations drawn from many trajectories. We step
``num_envs`` environments in lock-step in one process (the policy sees a batch, which a
trained recurrent policy needs), keep every observation of a running game, and put the
k-th kept observation at a random slot of the (N, 2) pair arrays: every observation is
used once, pairs mix episodes and time, and memory holds one copy of the data.

The policy is a seam (``CollectionPolicy``): it builds the envs it acts in, so a trained
checkpoint gets its run's method wrappers (``CheckpointPolicy`` in ``checkpoint_policy.py``);
the uniform random policy lives here. ``collection.json`` in the dataset records the task,
seed and policy (for a checkpoint: run, file, sha256, env steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

import gymnasium as gym
import numpy as np
from nle import nethack

from llmexplore.envs import get_task, make_adapter
from llmexplore.errors import ConfigError
from llmexplore.methods.motif.dataset import PairDataset, write_pair_dataset
from llmexplore.methods.motif.folder_lock import folder_writer

DATA_KEYS = ("message", "blstats", "tty_chars", "tty_colors")
#: info arrays: name -> blstats index
INFO_FROM_BLSTATS = {
    "score": nethack.NLE_BL_SCORE,
    "turns": nethack.NLE_BL_TIME,
    "experience_level": nethack.NLE_BL_XP,
    "depth": nethack.NLE_BL_DEPTH,
    "level_num": nethack.NLE_BL_DLEVEL,
    "gold": nethack.NLE_BL_GOLD,
}
_SEED_STRIDE = 1_000_003


class CollectionPolicy(Protocol):
    """Chooses actions for a batch of environments it built itself."""

    #: the task its envs play
    task: str
    #: observation keys ``act`` reads (only these are batched for it)
    obs_keys: tuple[str, ...]

    def make_env(self, extra_keys: tuple[str, ...]) -> gym.Env:
        """One env as this policy expects it (wrappers included), with the extra NLE keys."""

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
        """The task's plain adapter env with the extra NLE keys; notes its action count for ``act``."""
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
    if not set(DATA_KEYS[:2]) <= set(make_adapter(spec).obs_keys):
        raise ConfigError(f"motif collect needs a NetHack task (NetHack's message and bottom-line stats: a nethack "
                          f"or minihack task), not '{task}'", hint="e.g. --task nethack:score")
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
        data, stats = _roll_out(policy, 2 * pairs, seed, num_envs, progress)
        arrays = {k: v.reshape(pairs, 2, *v.shape[1:]) for k, v in data.items()}
        blstats = arrays["blstats"]
        info = {name: blstats[..., index].astype(np.int64) for name, index in INFO_FROM_BLSTATS.items()}
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


def _roll_out(policy: CollectionPolicy, total: int, seed: int, num_envs: int,
              progress: Callable[[int, int], None] | None) -> tuple[dict[str, np.ndarray], CollectStats]:
    """Step ``num_envs`` envs in lock-step until ``total`` observations are kept, each at its random slot."""
    envs: list[gym.Env] = []
    kept = steps = episodes = 0
    try:
        for i in range(num_envs):
            envs.append(policy.make_env(extra_keys=("tty_chars", "tty_colors")))
            envs[-1].unwrapped.seed_episodes(seed * _SEED_STRIDE + i)
        space = envs[0].observation_space
        data = {k: np.zeros((total, *space[k].shape), dtype=_dtype(k, space[k].dtype)) for k in DATA_KEYS}
        slots = np.random.default_rng([seed, 1]).permutation(total)  # kept observation k -> flat slot
        policy.reset(num_envs)
        obs = [env.reset()[0] for env in envs]
        dones = np.ones(num_envs, dtype=bool)
        while kept < total:
            for o in obs:
                if kept == total:
                    break
                if o["blstats"][nethack.NLE_BL_HPMAX] <= 0:  # the game is over: the screen shows no game state
                    continue
                slot = slots[kept]
                for key in DATA_KEYS:
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
