"""MiniHack adapter: each task as a gymnasium env with the NetHack family's observation keys.

The observation is built the NetHack family's way (``nethack.adapter``: its space, its 9x9
``crop_around``), so the NetHack small network, ONI's captions (decoded ``message``), ELLM-BoW
and Motif read MiniHack as they read NetHack. Episode stats: return, length, success (the
episode ended with MiniHack's ``TASK_SUCCESSFUL``: the agent reached the goal) and died.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np
from nle import nethack
from nle.env.base import NLE

from llmexplore.envs.base import EPISODE_STATS_KEY, EnvAdapter
from llmexplore.envs.minihack import compat, level_patch
from llmexplore.envs.nethack.adapter import (EXTRA_KEYS, NetHackLanguage, _observation_space, crop_around,
                                             episode_seeds, nethack_action_name)
from llmexplore.errors import ConfigError, MissingExtraError

BASE_KEYS = ("message", "blstats", "chars")


class MiniHackEnv(gym.Env):
    """One MiniHack task with the NetHack family's observation keys and success stats.

    Seeding: ``reset(seed=s)`` or ``seed_episodes(s)`` makes this and every later episode
    reproducible (NetHack's seeds and, for MultiRoom, minigrid's layout seed are derived from
    (s, episode index)); without a seed MiniHack picks its own.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, env_id: str, max_episode_steps: int, extra_keys: Sequence[str] = ()):
        unknown = [k for k in extra_keys if k not in EXTRA_KEYS]
        if unknown:
            raise ConfigError(f"unknown MiniHack observation keys {unknown}", hint=f"choose from {list(EXTRA_KEYS)}")
        self._extra_keys = tuple(extra_keys)
        keys = tuple(dict.fromkeys(BASE_KEYS + self._extra_keys))
        self.minihack = make_minihack(env_id, observation_keys=keys, max_episode_steps=max_episode_steps)
        self.observation_space = _observation_space(self._extra_keys)
        self.action_space = self.minihack.action_space
        self.action_names = [nethack_action_name(a) for a in self.minihack.actions]
        self._seed_base: int | None = None
        self._episode = 0
        self._return = 0.0
        self._length = 0
        self._last_raw: Mapping[str, np.ndarray] = {}

    def seed_episodes(self, seed: int) -> None:
        """Make the next and all later episodes reproducible without resetting now."""
        self._seed_base, self._episode = int(seed), 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Seed this episode's NetHack (and MultiRoom's minigrid
        layout) when seeded, then reset; ``options`` are ignored."""
        super().reset(seed=seed)
        if seed is not None:
            self.seed_episodes(seed)
        if self._seed_base is not None:
            core, disp = episode_seeds(self._seed_base, self._episode)
            layout = getattr(self.minihack, "minigrid_env", None)
            if layout is not None:  # MultiRoom draws its rooms with minigrid before NetHack starts
                layout.reset(seed=core % 2**31)
            NLE.seed(self.minihack, core, disp, reseed=False)  # MiniGridHack.seed calls a gym-era API
        self._episode += 1
        raw, info = self.minihack.reset()
        self._return, self._length = 0.0, 0
        return self._obs(raw), info

    def step(self, action):
        """One MiniHack step; the last one's info carries return, length, success and died."""
        raw, reward, terminated, truncated, info = self.minihack.step(int(action))
        self._return += reward
        self._length += 1
        if terminated or truncated:
            status = info.get("end_status")
            info[EPISODE_STATS_KEY] = {
                "return": float(self._return),
                "length": self._length,
                "success": int(status == self.minihack.StepStatus.TASK_SUCCESSFUL),
                "died": int(status == self.minihack.StepStatus.DEATH),
            }
        return self._obs(raw), reward, terminated, truncated, info

    def _obs(self, raw: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._last_raw = raw
        blstats = raw["blstats"]
        obs = {
            "message": raw["message"].copy(),  # NLE reuses its arrays between steps
            "blstats": blstats.astype(np.float32),
            "crop": crop_around(raw["chars"], int(blstats[nethack.NLE_BL_X]), int(blstats[nethack.NLE_BL_Y])),
        }
        for key in self._extra_keys:
            obs[key] = raw[key].copy()
        return obs

    def render(self) -> str:
        """The (21, 79) map characters as text lines; KeyError before the first reset."""
        return "\n".join(row.tobytes().decode("latin-1") for row in self._last_raw["chars"])

    def close(self) -> None:
        """Close the MiniHack game."""
        self.minihack.close()


def make_minihack(env_id: str, **kwargs: Any) -> Any:
    """The registered MiniHack env itself, without gymnasium's wrappers (MiniHack counts its own steps);
    ``kwargs`` go to its constructor after the registration's own. Its later levels are compiled by
    ``level_patch`` (the same levels, without MiniHack's six-process shell script)."""
    from gymnasium.envs.registration import load_env_creator

    spec = gym.spec(env_id)
    creator = spec.entry_point if callable(spec.entry_point) else load_env_creator(spec.entry_point)
    env = creator(**{**spec.kwargs, **kwargs})
    level_patch.install(env)
    return env


class MiniHackAdapter(NetHackLanguage, EnvAdapter):
    family = "minihack"
    metric = "success"

    def make_env(self, seed: int | None = None, extra_keys: Sequence[str] = ()) -> MiniHackEnv:
        """A MiniHackEnv for the task's registered id and step limit, after ``validate_data``."""
        self.validate_data()
        opts = self.task.options
        env = MiniHackEnv(opts["env_id"], int(opts["max_episode_steps"]), extra_keys=extra_keys)
        if seed is not None:
            env.seed_episodes(seed)
        return env

    def validate_data(self) -> None:
        """MultiRoom tasks need minigrid, which builds their rooms: say so before any work."""
        if self.task.options.get("minigrid") and not compat.minigrid_installed():
            raise MissingExtraError("minigrid", "minihack", f"MiniHack task '{self.task.name}' (MultiRoom)")

    def environment_info(self) -> dict[str, Any]:
        """NLE's and MiniHack's versions and the registered env id the task runs."""
        return {**super().environment_info(), "minihack": compat.MINIHACK_VERSION,
                "minihack_env": self.task.options["env_id"]}

    def summarize(self, episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Mean success, return, length and died over the episodes, plus the episode count."""
        out: dict[str, float] = {"episodes": float(len(episodes))}
        for key in ("success", "return", "length", "died"):
            values = [float(e[key]) for e in episodes if key in e]
            if values:
                out[key] = float(np.mean(values))
        return out
