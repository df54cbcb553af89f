"""The batched sampling path: K training envs stepped in one process behind sample-factory's vector interface.

Why: on the per-env path sample-factory keeps trajectory bookkeeping, policy requests and Python calls for
every scalar env, which cost more CPU per step than NetHack itself (issue 54). With ``train.sampling=batched``
each rollout worker holds one vector env of its K envs (one per split where ``sf_args.worker_num_splits``
splits them), ``num_agents`` = K, and sample-factory moves whole [K, ...] tensors. Each sub-env is the very env the per-env path builds (``sf_env.build_env``: adapter, the
method's actor-side wrapper, the training tag), seeded with the same uid, so sub-env i plays what scalar env i
plays given the same actions.

sample-factory keeps only tensors (or numbers) of a vector env's infos, one value per sub-env, so a finished
episode's statistics travel as one tensor per key (``encode_episode_stats``) and the main process splits them
back into one row per episode (``episode_rows``).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from llmexplore.agents.train_config import BATCHED, TrainConfig, worker_splits
from llmexplore.envs.base import EPISODE_STATS_KEY


def sampling_sf_args(train: TrainConfig) -> dict[str, Any]:
    """sample-factory's options for the run's sampling path: per-env, a worker's envs in two halves (double
    buffering) when their number is even; batched, one vector env of them all, unless sf_args split them."""
    splits = int(worker_splits(train.envs_per_worker, train.sf_args, train.sampling))
    if train.sampling != BATCHED:
        return {"num_envs_per_worker": train.envs_per_worker, "worker_num_splits": splits}
    return {"num_envs_per_worker": splits, "worker_num_splits": splits, "batched_sampling": True}


class VectorTrainingEnv(gym.Env):
    """K sub-envs stepped in turn, observations written into preallocated [K, ...] arrays, finished sub-envs
    reset here (as sample-factory's per-env wrapper resets a scalar env).

    sample-factory wraps the returned arrays without copying and copies them into its buffers before the
    next step, so reusing the same arrays each step is safe."""

    is_multiagent = True

    def __init__(self, envs: Sequence[gym.Env], uids: Sequence[int]):
        # sample-factory reads num_agents through its own wrappers around this env, which gymnasium warns
        # about once per attribute; the values are ours and answered here
        warnings.filterwarnings("ignore", message=r".*env\.(num_agents|is_multiagent) to get variables")
        if not envs or len(envs) != len(uids):
            raise ValueError(f"a vector env needs one uid per sub-env, got {len(envs)} envs and {len(uids)} uids")
        self.envs = list(envs)
        self.uids = [int(uid) for uid in uids]
        self.num_agents = len(self.envs)
        self.observation_space = self.envs[0].observation_space  # one sub-env's, as sample-factory expects
        self.action_space = self.envs[0].action_space
        if not isinstance(self.observation_space, gym.spaces.Dict):
            raise TypeError("sample-factory's batched path needs a Dict observation space")
        self._obs = {key: np.zeros((self.num_agents, *space.shape), dtype=space.dtype)
                     for key, space in self.observation_space.spaces.items()}
        self._rewards = np.zeros(self.num_agents, dtype=np.float32)
        self._terminated = np.zeros(self.num_agents, dtype=bool)
        self._truncated = np.zeros(self.num_agents, dtype=bool)
        self._seeded = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every sub-env; the first reset seeds sub-env i with its uid, as the per-env path seeds scalar
        env i (sample-factory's own ``seed`` for the vector env as a whole is not used)."""
        for index, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if self._seeded else self.uids[index], options=options)
            self._write(index, obs)
        self._seeded = True
        return self._obs, {}

    def step(self, actions: Any):
        """Step each sub-env with its action; a finished one is reset at once and its episode's statistics
        go into the infos (``encode_episode_stats``)."""
        finished: list[tuple[int, Mapping[str, Any]]] = []
        for index, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(int(actions[index]))
            self._rewards[index] = reward
            self._terminated[index] = terminated
            self._truncated[index] = truncated
            if terminated or truncated:
                finished.append((index, info.get(EPISODE_STATS_KEY) or {}))
                obs, _ = env.reset()
            self._write(index, obs)
        infos = {EPISODE_STATS_KEY: encode_episode_stats(finished, self.num_agents)} if finished else {}
        return self._obs, self._rewards, self._terminated, self._truncated, infos

    def _write(self, index: int, obs: Mapping[str, np.ndarray]) -> None:
        for key, array in self._obs.items():
            array[index] = obs[key]

    def close(self) -> None:
        """Close every sub-env."""
        for env in self.envs:
            env.close()


def encode_episode_stats(finished: Sequence[tuple[int, Mapping[str, Any]]], num_agents: int) -> dict[str, Any]:
    """One tensor of ``num_agents`` values per statistic of the episodes that just ended (index, row).

    A statistic every finished row holds as an integer travels as int64, so the row reads back as integers;
    any other as float64, NaN where a row lacks it (read back as absent)."""
    import torch

    keys = dict.fromkeys(key for _, row in finished for key in row)
    encoded: dict[str, Any] = {}
    for key in keys:
        values = [(index, row.get(key)) for index, row in finished]
        if not all(isinstance(value, numbers.Number) or value is None for _, value in values):
            raise TypeError(f"episode statistic {key!r} is not a number; the batched path carries numbers only")
        integral = all(_is_integral(value) for _, value in values)
        column = torch.zeros(num_agents, dtype=torch.int64) if integral else torch.full(
            (num_agents,), float("nan"), dtype=torch.float64)
        for index, value in values:
            if value is not None:
                column[index] = int(value) if integral else float(value)
        encoded[key] = column
    return encoded


def _is_integral(value: Any) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, float)


def episode_rows(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of the episodes one sampler message reports: one from the per-env path (``reward``, ``len``
    and the env's ``episode_extra_stats`` dict), one per finished sub-env from the batched path (arrays, the
    env's statistics flattened to ``episode_extra_stats/<key>``). Each row has ``return`` and ``length``."""
    if not isinstance(stats.get("reward"), np.ndarray):
        row = dict(stats.get(EPISODE_STATS_KEY) or {})
        row.setdefault("return", float(stats["reward"]))
        row.setdefault("length", int(stats["len"]))
        return [row]
    rewards, lengths = np.atleast_1d(stats["reward"]), np.atleast_1d(stats["len"])
    prefix = f"{EPISODE_STATS_KEY}/"
    columns = {key[len(prefix):]: np.atleast_1d(value) for key, value in stats.items() if key.startswith(prefix)}
    rows = []
    for position in range(len(rewards)):
        row: dict[str, Any] = {}
        for key, column in columns.items():
            value = column[position] if len(column) == len(rewards) else column[0]
            if np.issubdtype(column.dtype, np.integer):
                row[key] = int(value)
            elif not np.isnan(value):
                row[key] = float(value)
        row.setdefault("return", float(rewards[position]))
        row.setdefault("length", int(lengths[position]))
        rows.append(row)
    return rows
