"""The actor-side frame ELLM's environment wrappers share: goal and reward observation keys.

Each step the wrapper (1) rewards the transition against the goals suggested for the
state it started from, and (2) asks for the goals of the state it reached. Two keys go
into every observation:

* ``ellm_goal`` (float32, the embedding size): the mean sentence embedding of the goals
  suggested for this state, zeros when there are none. The policy conditions on it
  (``ELLM.policy_keys``).
* ``ellm_reward`` (float32, 1): ELLM's reward for the transition that led to this
  observation. The learner reads it from the next observation of each transition.

sample-factory resets an env as soon as an episode ends and stores the reset observation
in place of the last one, so the reset observation carries the reward of the transition
that ended the previous episode (a reset that follows no episode end carries 0); the
learner therefore never masks ELLM's reward at episode ends.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.methods.ellm.embedding import SentenceEmbedder

GOAL_KEY = "ellm_goal"
REWARD_KEY = "ellm_reward"
_MAX_GOAL_SETS = 100_000


class GoalRewardWrapper(gym.Wrapper):
    """Shared bookkeeping; subclasses say how goals are suggested and how a step is rewarded."""

    def __init__(self, env: gym.Env, embedder: SentenceEmbedder, goal_conditioning: bool = True):
        super().__init__(env)
        self.embedder = embedder
        self.goal_conditioning = goal_conditioning
        spaces = dict(env.observation_space.spaces)
        spaces[GOAL_KEY] = gym.spaces.Box(-1.0, 1.0, (embedder.dim,), np.float32)
        spaces[REWARD_KEY] = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self._zero_goal = np.zeros(embedder.dim, dtype=np.float32)
        self._goal_vectors: dict[tuple[str, ...], np.ndarray] = {}
        self.goals: tuple[str, ...] = ()  # suggested for the current state
        self._pending = 0.0  # reward of the transition that ended the last episode
        self._episode: dict[str, float] = {}

    # -- what subclasses provide --------------------------------------------------------------
    @abstractmethod
    def start_episode(self, obs: dict[str, np.ndarray]) -> None:
        """Forget the last episode (achieved goals, places seen)."""

    @abstractmethod
    def suggest(self, obs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """Goals for this state, achieved ones already left out."""

    @abstractmethod
    def transition_reward(self, action: Any, obs: dict[str, np.ndarray], info: dict[str, Any]) -> float:
        """ELLM's reward for the step just taken, judged against ``self.goals`` (the previous state's)."""

    # -- gym ----------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode and suggest its first goals; ``ellm_reward`` carries the
        reward of the transition that ended the previous episode (0 if none)."""
        obs, info = self.env.reset(seed=seed, options=options)
        carried, self._pending = self._pending, 0.0
        self._episode = {"ellm_reward": 0.0, "ellm_goals_achieved": 0.0, "ellm_suggestions": 0.0, "steps": 0.0}
        self.start_episode(obs)
        self.goals = self.suggest(obs)
        return self._emit(obs, carried), info

    def step(self, action):
        """Reward the step against the previous state's goals, suggest the new state's, and
        write both keys; at an episode's end, add ELLM's totals to the episode stats."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        r = float(self.transition_reward(action, obs, info))
        self._episode["ellm_reward"] += r
        self._episode["steps"] += 1
        self.goals = self.suggest(obs)
        self._episode["ellm_suggestions"] += len(self.goals)
        if terminated or truncated:
            self._pending = r
            stats = info.get(EPISODE_STATS_KEY)
            if stats is not None:
                steps = max(self._episode["steps"], 1.0)
                stats["ellm_return"] = self._episode["ellm_reward"]
                stats["ellm_goals_achieved"] = self._episode["ellm_goals_achieved"]
                stats["ellm_suggestions_per_step"] = self._episode["ellm_suggestions"] / steps
        return self._emit(obs, r), reward, terminated, truncated, info

    # -- helpers ------------------------------------------------------------------------------
    def count_achieved(self, n: int) -> None:
        """Add ``n`` to this episode's ``ellm_goals_achieved`` statistic."""
        self._episode["ellm_goals_achieved"] += n

    def goal_vector(self, goals: Sequence[str]) -> np.ndarray:
        """Mean embedding of a goal set, memoised (goal sets repeat)."""
        if not goals or not self.goal_conditioning:
            return self._zero_goal
        key = tuple(goals)
        found = self._goal_vectors.get(key)
        if found is None:
            found = self.embedder.vectors(list(goals)).mean(axis=0).astype(np.float32)
            if len(self._goal_vectors) >= _MAX_GOAL_SETS:
                self._goal_vectors.clear()
            self._goal_vectors[key] = found
        return found

    def _emit(self, obs: dict[str, np.ndarray], reward: float) -> dict[str, np.ndarray]:
        obs[GOAL_KEY] = self.goal_vector(self.goals)
        obs[REWARD_KEY] = np.array([reward], dtype=np.float32)
        return obs
