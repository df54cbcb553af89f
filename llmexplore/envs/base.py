"""The environment-adapter interface every benchmark environment implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import gymnasium as gym
import numpy as np

#: info key on the last step of an episode that carries its flat, scalar stats.
EPISODE_STATS_KEY = "episode_extra_stats"
#: observation key the training env adds: which env instance a step came from, so learner-side
#: sums (episode returns, skill activations) can follow one env across batches
ENV_UID_KEY = "env_uid"


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark task: an adapter family plus the options that make the task."""

    name: str  # "family:task", e.g. "nethack:score"
    family: str
    description: str
    default_budget: int  # env steps of the published protocol
    reward_free: bool = False
    default_ext_coef: float = 1.0  # c_ext in docs/METHODS.md's combination, before the method's own choice
    options: Mapping[str, Any] = field(default_factory=dict)


class EnvAdapter(ABC):
    """Builds gymnasium dict-observation envs for the tasks of one environment family.

    The adapter owns everything the rest of the suite needs to know about an
    environment: its observation keys, the text an LM sees, the per-episode stats it
    emits (on the info dict of the last step, under ``EPISODE_STATS_KEY``), and how
    a set of episodes turns into the benchmark's metrics.
    """

    #: the name of its ``EnvFamily`` (``envs/<family>/family.py``), which names its networks
    family: ClassVar[str]
    #: name of the benchmark's progress metric in episode stats and summaries
    metric: ClassVar[str]

    def __init__(self, task: TaskSpec):
        self.task = task

    @abstractmethod
    def make_env(self, seed: int | None = None, extra_keys: Sequence[str] = ()) -> gym.Env:
        """A fresh env; ``extra_keys`` asks for optional observation keys (e.g. for recording)."""

    @abstractmethod
    def observation_space(self) -> gym.spaces.Dict:
        """The observation keys and spaces of ``make_env()`` without extra keys."""

    @abstractmethod
    def caption(self, obs: Mapping[str, np.ndarray]) -> str:
        """The text a language model sees for this observation."""

    @abstractmethod
    def summarize(self, episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Benchmark metrics over episodes (each one a row of episode stats)."""

    def environment_info(self) -> dict[str, Any]:
        """Facts about how this environment is simulated that the run record keeps (e.g. versions)."""
        return {}

    #: how many of the last training episodes the final metrics average (None: all of them)
    final_window: ClassVar[int | None] = 100

    def episodes_in_budget(self, episodes: Sequence[Mapping[str, Any]], budget: int) -> list[Mapping[str, Any]]:
        """Training episodes that ended within the env-step budget (by the sampler's count)."""
        return [e for e in episodes if e.get("env_steps", 0) <= budget]

    def final_metrics(self, episodes: Sequence[Mapping[str, Any]], budget: int) -> tuple[dict[str, float], str]:
        """The record's final metrics and a sentence saying which episodes they cover."""
        kept = self.episodes_in_budget(episodes, budget)
        if self.final_window is not None:
            kept = kept[-self.final_window :]
            note = f"mean over the last {self.final_window} training episodes within the budget"
        else:
            note = "over all training episodes within the budget"
        return self.summarize(kept), note

    def validate_data(self) -> None:
        """Stop early, with a clear message, when a data file this task needs is missing."""

    @property
    def obs_keys(self) -> tuple[str, ...]:
        """The observation keys the adapter's env returns by default."""
        return tuple(self.observation_space().spaces.keys())
