"""A trained checkpoint of any run as the policy that collects a Motif pair dataset.

The published dataset came from agents trained on the game score, not from random play:
a trained agent meets monsters, gold and stairs far more often, so the LM sees the
messages that matter. ``CheckpointPolicy`` loads a run's checkpoint through
``agents.policy.load_policy`` (which checks that the checkpoint belongs to the run) and
plays it in envs built as in that run's training (its method's wrappers included), with
one RNN state per env, reset whenever that env starts a new episode.

Actions are sampled from the policy by default, as during training; ``greedy`` takes the
most likely action instead. The network runs on one CPU thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import torch

from llmexplore.agents.for_methods import Policy, build_env, load_policy, single_thread
from llmexplore.envs import get_task
from llmexplore.errors import ConfigError


class CheckpointPolicy:
    """``CollectionPolicy`` over a loaded checkpoint; ``task`` defaults to the run's own."""

    def __init__(self, policy: Policy, task: str | None = None, greedy: bool = False, seed: int = 0):
        self.policy = policy
        trained_on = policy.settings.run.task
        self.task = get_task(task).name if task else trained_on
        self.settings = policy.settings.with_run(task=self.task)
        self.greedy = greedy
        self.obs_keys: tuple[str, ...] = policy.obs_keys
        self.generator = torch.Generator().manual_seed(int(seed))
        self.state = policy.initial_state(0)
        if self.task != trained_on:
            self._check_task_fits(trained_on)

    @classmethod
    def load(cls, run_dir: str | Path, checkpoint: str = "latest", task: str | None = None, greedy: bool = False,
             seed: int = 0) -> "CheckpointPolicy":
        """A run's checkpoint (``latest`` or one ``load_policy`` accepts)
        as the collection policy; ``task`` defaults to the run's own."""
        return cls(load_policy(run_dir, checkpoint), task=task, greedy=greedy, seed=seed)

    def _check_task_fits(self, trained_on: str) -> None:
        """Another task is fine when the network can read its observations and act in it."""
        env = self.make_env(())
        try:
            space, actions = env.observation_space, env.action_space
        finally:
            env.close()
        if actions != self.policy.action_space:
            raise ConfigError(f"the checkpoint was trained on '{trained_on}' with {self.policy.action_space}, "
                              f"but '{self.task}' has {actions}",
                              hint="collect in the run's own task (leave out --task) or one with the same actions")
        for key in self.obs_keys:
            theirs, ours = space.spaces.get(key), self.policy.observation_space.spaces[key]
            if theirs is None or theirs.shape != ours.shape:
                raise ConfigError(f"observation '{key}' of '{self.task}' does not fit the checkpoint trained on "
                                  f"'{trained_on}'", hint="collect in the run's own task (leave out --task)")

    # -- CollectionPolicy ------------------------------------------------------------------------
    def make_env(self, extra_keys: tuple[str, ...]) -> gym.Env:
        """One env built as in the run's training (its method's wrappers included) with the extra NLE keys."""
        return build_env(self.settings, uid=0, extra_keys=tuple(extra_keys))

    def reset(self, num_envs: int) -> None:
        """Fresh recurrent states for ``num_envs`` envs."""
        self.state = self.policy.initial_state(num_envs)

    def act(self, obs: Mapping[str, np.ndarray], dones: np.ndarray) -> np.ndarray:
        """Actions (num_envs,) for the batched observations; the recurrent states of envs
        flagged in ``dones`` restart first. Sampled, or the most likely with ``greedy``."""
        starting = torch.as_tensor(np.asarray(dones, dtype=bool))
        if bool(starting.any()):
            self.state[starting] = 0.0
        with single_thread():
            actions, self.state = self.policy.act(obs, self.state, greedy=self.greedy, generator=self.generator)
        return actions

    def describe(self) -> dict[str, Any]:
        """Run folder, checkpoint file, sha256, env steps, method, trained task and ``greedy``, for collection.json."""
        info = self.policy.checkpoint
        return {"kind": "checkpoint", "run_dir": self.policy.settings.run_dir, "checkpoint": str(info.path),
                "sha256": info.sha256, "env_steps": info.env_steps, "method": self.policy.settings.run.method,
                "trained_task": self.policy.settings.run.task, "greedy": self.greedy}
