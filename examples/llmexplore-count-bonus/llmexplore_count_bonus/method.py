"""Episodic count bonus: r_int(s_t -> s_{t+1}) = 1 / sqrt(n(s_{t+1})), where n counts how often the
episode has seen the exact value of one observation key (``count_key``).

Both sides of the method interface are used: the actor-side wrapper (``wrap_env``) counts within each
episode in the rollout worker and writes the bonus into a new observation key; the learner side
(``reward``) reads that key from the batch, and keeps a total in ``state_dict`` that survives a resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import gymnasium as gym
import numpy as np
from pydantic import Field

from llmexplore.errors import ConfigError
from llmexplore.methods.base import CheckContext, IntrinsicReward, MethodContext, MethodOptions, RewardBatch
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: the observation key the wrapper adds: the bonus of the transition that led to this observation
BONUS_KEY = "count_bonus"


class CountBonusOptions(MethodOptions):
    count_key: str = Field(..., min_length=1, description="observation key whose exact value is counted")
    exponent: float = Field(0.5, gt=0, le=4, allow_inf_nan=False, description="bonus = 1 / count**exponent")


class EpisodicCountWrapper(gym.Wrapper):
    """Counts the values of ``key`` within the episode and adds ``count_bonus`` (shape (1,), float32)."""

    def __init__(self, env: gym.Env, key: str, exponent: float):
        super().__init__(env)
        self.key, self.exponent = key, exponent
        spaces = dict(env.observation_space.spaces)
        spaces[BONUS_KEY] = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self.counts: dict[bytes, int] = {}
        self.carried = 0.0

    def _bonus(self, obs: Mapping[str, Any]) -> float:
        state = np.asarray(obs[self.key]).tobytes()
        self.counts[state] = self.counts.get(state, 0) + 1
        return float(self.counts[state] ** -self.exponent)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.counts = {}
        self._bonus(obs)  # the first observation counts as seen
        # the last transition of the previous episode leads to this observation (base.py's timing convention)
        obs[BONUS_KEY] = np.array([self.carried], dtype=np.float32)
        self.carried = 0.0
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        bonus = self._bonus(obs)
        if terminated or truncated:
            self.carried = bonus  # the auto-reset's observation carries it
        obs[BONUS_KEY] = np.array([bonus], dtype=np.float32)
        return obs, reward, terminated, truncated, info


@register_method
class EpisodicCountBonus(IntrinsicReward):
    name = "count-bonus"
    display_name = "Count bonus"
    description = "episodic count bonus 1/sqrt(n) on one observation key (example plugin, docs/EXTENDING.md)"
    default_int_coef = 0.1
    Options = CountBonusOptions

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        super().check_run(run)  # the base check: needed_keys are in the observation space
        key = run.options.count_key  # type: ignore[attr-defined]
        if key not in run.obs_space.spaces:
            raise ConfigError(f"count-bonus: '{key}' is not an observation key of task '{run.task.name}'",
                              hint=f"-o count_key=<one of {sorted(run.obs_space.spaces)}>")

    @classmethod
    def wrap_env(cls, env: gym.Env, options: CountBonusOptions, context: MethodContext) -> gym.Env:
        return EpisodicCountWrapper(env, options.count_key, options.exponent)

    def __init__(self, options: CountBonusOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        super().__init__(options, context, obs_space)
        if BONUS_KEY not in obs_space.spaces:
            raise ConfigError(f"observations lack '{BONUS_KEY}': the env was not wrapped by wrap_env")
        self.total_bonus = 0.0
        self.transitions = 0

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        r_int = batch.next_obs[BONUS_KEY][..., 0].float()  # [N, T]
        self.total_bonus += float(r_int.sum())
        self.transitions += r_int.numel()
        return r_int

    def metrics(self) -> dict[str, float]:
        return {"mean_bonus": self.total_bonus / max(self.transitions, 1)}

    def state_dict(self) -> dict[str, Any]:
        return {"total_bonus": self.total_bonus, "transitions": self.transitions}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.total_bonus = float(state["total_bonus"])
        self.transitions = int(state["transitions"])

    def state_summary(self) -> dict[str, Any]:
        return {"transitions": self.transitions}
