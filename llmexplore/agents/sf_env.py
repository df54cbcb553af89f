"""The environment factory sample-factory calls in every rollout worker."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from llmexplore.agents.episode_ledger import EPISODE_UID_KEY
from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.train_config import BATCHED
from llmexplore.envs import make_adapter
from llmexplore.envs.base import ENV_UID_KEY, EPISODE_STATS_KEY
from llmexplore.envs.wrappers import DropKeys

SF_ENV_NAME = "llmexplore"
_SEED_STRIDE = 1_000_003


class TrainingEnv(gym.Wrapper):
    """Tags observations and finished episodes with the env instance id and makes seeds run-specific.

    sample-factory seeds the first reset of env i with i; we mix in the run seed so two
    seeds of a grid do not replay the same episodes. The ``env_uid`` key lets the learner
    add up each episode's intrinsic return across batches; the same uid in a finished episode's
    statistics lets the main process file the episode under the batch that trained it
    (``episode_ledger.py``).
    """

    # answered here so sample-factory does not look them up through the wrapper chain
    num_agents = 1
    is_multiagent = False

    def __init__(self, env: gym.Env, uid: int, run_seed: int, tag_episodes: bool = False):
        super().__init__(env)
        #: whether finished episodes' statistics carry the uid (training does; rollouts of a policy do not)
        self._tag_episodes = tag_episodes
        self._uid = np.array([uid], dtype=np.int32)
        self._run_seed = int(run_seed)
        spaces = dict(env.observation_space.spaces)
        spaces[ENV_UID_KEY] = gym.spaces.Box(0, np.iinfo(np.int32).max, (1,), np.int32)
        self.observation_space = gym.spaces.Dict(spaces)

    def _tag(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs[ENV_UID_KEY] = self._uid
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """The wrapped reset, the run seed mixed into a given seed (None stays None); observation tagged."""
        if seed is not None:
            seed = self._run_seed * _SEED_STRIDE + int(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return self._tag(obs), info

    def step(self, action):
        """The wrapped step, with the observation tagged with the env id."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._tag_episodes and (terminated or truncated):
            stats = {**info.get(EPISODE_STATS_KEY, {}), EPISODE_UID_KEY: int(self._uid[0])}
            info = {**info, EPISODE_STATS_KEY: stats}
        return self._tag(obs), reward, terminated, truncated, info


def build_env(settings: RunSettings, uid: int = 0, extra_keys: tuple[str, ...] = (),
              tag_episodes: bool = False) -> gym.Env:
    """Adapter env + the method's actor-side wrapper + the training tag (``tag_episodes``: training's
    episode statistics name their env, see ``TrainingEnv``).

    Keys the method's wrapper reads (``env_keys``) are asked from the adapter and dropped after
    the wrapper unless the caller asked for them as well."""
    from llmexplore.networks.encoders import encoder_obs_keys

    adapter = make_adapter(settings.run.task)
    method_cls, options = settings.method_class_and_options()
    method_keys = tuple(method_cls.env_keys(adapter.task, options))
    extra_keys = tuple(dict.fromkeys(encoder_obs_keys(settings.run.encoder) + tuple(extra_keys)))
    env = adapter.make_env(extra_keys=tuple(dict.fromkeys(tuple(extra_keys) + method_keys)))
    env = method_cls.wrap_env(env, options, settings.method_context())
    private = tuple(k for k in method_keys if k not in extra_keys)
    if private:
        env = DropKeys(env, private)
    return TrainingEnv(env, uid=uid, run_seed=settings.run.seed, tag_episodes=tag_episodes)


def make_sf_env(full_env_name: str, cfg: Any = None, env_config: Any = None, render_mode: str | None = None) -> gym.Env:
    """sample-factory's env factory signature: one scalar env (per-env path), or the vector env of one
    worker's split (batched path, ``train.sampling``)."""
    quiet_sample_factory_console()
    settings = RunSettings.from_cfg(cfg)
    if settings.run.train.sampling == BATCHED:
        from llmexplore.agents.vector_env import VectorTrainingEnv

        uids = sub_env_uids(settings.run.train.envs_per_worker, int(cfg.worker_num_splits), env_config)
        return VectorTrainingEnv([build_env(settings, uid=uid, tag_episodes=True) for uid in uids], uids)
    uid = int(env_config.env_id) if env_config is not None and "env_id" in env_config else 0
    return build_env(settings, uid=uid, tag_episodes=True)


def sub_env_uids(envs_per_worker: int, splits: int, env_config: Any = None) -> list[int]:
    """The uids of one batched vector env's sub-envs: those of the scalar envs the per-env path builds for
    the same worker and split (sample-factory numbers env j of split s of worker w as
    w * envs_per_worker + s * envs_per_split + j), so sub-env i is seeded as scalar env i."""
    worker = int(env_config.worker_index) if env_config is not None and "worker_index" in env_config else 0
    split = int(env_config.vector_index) if env_config is not None and "vector_index" in env_config else 0
    per_split = envs_per_worker // splits
    first = worker * envs_per_worker + split * per_split
    return list(range(first, first + per_split))


QUIET_ENV = "LLMEXPLORE_SF_QUIET"


def quiet_sample_factory_console() -> None:
    """Drop sample-factory's console handler in this process when the run asked for it.

    Spawned worker processes inherit the environment variable, import this module to
    unpickle their jobs, and so stay quiet too; everything still goes to sf_log.txt.
    """
    if os.environ.get(QUIET_ENV) != "1":
        return
    import logging

    from sample_factory.utils.utils import log

    log.handlers = [h for h in log.handlers if isinstance(h, logging.FileHandler)]


quiet_sample_factory_console()
