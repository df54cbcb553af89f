"""Environment wrappers several methods share (actor side, inside rollout workers).

``EpisodicMessageCount`` implements docs/METHODS.md's episodic message count: N_ep(m) is
the number of times the exact message m has been seen in the current episode,
counting this step. Motif and ONI divide their LM reward by N_ep(m)^beta, so an
agent cannot farm a rewarding message by repeating it. The count is computed here,
in the workers, because only they see every step of an episode in order; the learner
reads it from the observation key ``EPISODIC_MESSAGE_COUNT_KEY``.
"""

from __future__ import annotations

from collections import defaultdict

import gymnasium as gym
import numpy as np

#: observation key holding N_ep(m_t) as float32 of shape (1,)
EPISODIC_MESSAGE_COUNT_KEY = "episodic_message_count"


class EpisodicMessageCount(gym.Wrapper):
    """Adds ``EPISODIC_MESSAGE_COUNT_KEY``: how often this exact message (raw bytes,
    empty message included) has appeared in the episode so far, this step included."""

    def __init__(self, env: gym.Env, source_key: str = "message", key: str = EPISODIC_MESSAGE_COUNT_KEY):
        super().__init__(env)
        spaces = dict(env.observation_space.spaces)
        if source_key not in spaces:
            raise KeyError(f"EpisodicMessageCount needs observation key '{source_key}', env has {sorted(spaces)}")
        self.source_key = source_key
        self.key = key
        spaces[key] = gym.spaces.Box(1.0, np.inf, (1,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self._counts: defaultdict[bytes, int] = defaultdict(int)

    def _count(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        message = np.asarray(obs[self.source_key]).tobytes()
        self._counts[message] += 1
        obs[self.key] = np.array([self._counts[message]], dtype=np.float32)
        return obs

    def reset_counts(self) -> None:
        """Start counting afresh (MaestroMotif may count per skill activation instead of per episode)."""
        self._counts.clear()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset the inner env and the counts, so the first observation's message counts 1."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._counts.clear()
        return self._count(obs), info

    def step(self, action):
        """Step the inner env and add the count of this step's message to its observation."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._count(obs), reward, terminated, truncated, info


class DropKeys(gym.ObservationWrapper):
    """Removes observation keys (e.g. raw NLE arrays only an actor-side wrapper needed)."""

    def __init__(self, env: gym.Env, keys: tuple[str, ...]):
        super().__init__(env)
        self.keys = tuple(keys)
        spaces = {k: v for k, v in env.observation_space.spaces.items() if k not in self.keys}
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The observation with the dropped keys popped, in place (a key it lacks is skipped)."""
        for key in self.keys:
            observation.pop(key, None)
        return observation
