"""Two reward streams as RND published them (Burda et al., 2019; ``train.reward_streams=2``).

Why: with one critic, a method's bonus is added to the env reward and learned episodically with the
task's gamma. RND keeps a value head per stream instead: the env reward's return is episodic, the
bonus's return runs on across episodes with its own gamma (0.99; ``train.intrinsic_gamma``) and is
learned from the bonus divided by the running std of that return, so one c_int fits every env. PPO
then follows ``c_ext * A_ext + c_int * A_int``.

The rollout buffer of sample-factory holds one value per step (the extrinsic head's). The intrinsic
head's values are computed by the learner for the batch's T+1 steps from the stored GRU states, with
the weights it is about to train (what synchronous PPO would have stored), and its loss is added to
the extrinsic head's. A run with one stream builds sample-factory's network as before: its checkpoints
and results are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch
from sample_factory.algo.utils.rl_utils import gae_advantages, prepare_and_normalize_obs
from sample_factory.model.actor_critic import ActorCriticSharedWeights, default_make_actor_critic_func
from torch import nn

from llmexplore.methods.common import RunningMeanStd

#: the intrinsic value head's name in the network's state (a one-stream network has none)
INTRINSIC_HEAD = "critic_linear_int"


class TwoStreamActorCritic(ActorCriticSharedWeights):
    """sample-factory's shared actor-critic with an intrinsic value head beside its (extrinsic) one.

    ``values`` stays the extrinsic head's, as the rollout buffer expects; every forward keeps the intrinsic
    head's values in ``last_intrinsic_values`` [B], as sample-factory keeps ``last_action_distribution``.
    """

    def __init__(self, model_factory: Any, obs_space: Any, action_space: Any, cfg: Any):
        super().__init__(model_factory, obs_space, action_space, cfg)
        self.critic_linear_int = nn.Linear(self.critic_linear.in_features, 1)
        self.initialize_weights(self.critic_linear_int)  # after the others: their initial weights stay as they were
        self.last_intrinsic_values: torch.Tensor | None = None

    def forward_tail(self, core_output: torch.Tensor, values_only: bool, sample_actions: bool):
        """sample-factory's tail (one decoder pass), plus the intrinsic head's values."""
        from sample_factory.algo.utils.tensor_dict import TensorDict

        decoder_output = self.decoder(core_output)
        self.last_intrinsic_values = self.critic_linear_int(decoder_output).squeeze(-1)
        result = TensorDict(values=self.critic_linear(decoder_output).squeeze())
        if values_only:
            return result
        result["action_logits"], self.last_action_distribution = self.action_parameterization(decoder_output)
        self._maybe_sample_actions(sample_actions, result)
        return result


def make_actor_critic(cfg: Any, obs_space: Any, action_space: Any) -> nn.Module:
    """The run's network: with two reward streams ``TwoStreamActorCritic``, else sample-factory's own."""
    if streams_of(cfg) == 2:
        from sample_factory.algo.utils.context import global_model_factory

        return TwoStreamActorCritic(global_model_factory(), obs_space, action_space, cfg)
    return default_make_actor_critic_func(cfg, obs_space, action_space)


def streams_of(cfg: Any) -> int:
    """The reward streams of the run that sample-factory's ``cfg`` carries (1 for a config without a run)."""
    from llmexplore.agents.run_settings import RunSettings

    if not isinstance(getattr(cfg, "llmexplore", None), Mapping):
        return 1
    return RunSettings.from_cfg(cfg).run.train.reward_streams


class IntrinsicReturnNormalizer:
    """RND's normalisation: each bonus divided by the running std of the discounted intrinsic return.

    Each env's return so far (``RewardForwardFilter`` in RND's code) is kept by its uid across batches; it
    runs on across episodes unless ``episodic``. The batch's returns update the statistics before its
    bonuses are divided, as in RND's code.
    """

    def __init__(self, gamma: float, episodic: bool):
        self.gamma = gamma
        self.episodic = episodic
        self.returns: dict[int, float] = {}
        self.stats = RunningMeanStd(())

    def __call__(self, uids: np.ndarray, rewards: torch.Tensor, dones: torch.Tensor) -> torch.Tensor:
        """``rewards``, ``dones``: [N, T] (row n from the env ``uids[n]``); returns the normalised rewards."""
        values = rewards.detach().cpu().double().numpy()
        ends = dones.detach().cpu().numpy().astype(bool)
        returns = np.empty_like(values)
        for row, uid in enumerate(uids):
            running = self.returns.get(int(uid), 0.0)
            for step, reward in enumerate(values[row]):
                running = running * self.gamma + reward
                returns[row, step] = running
                if self.episodic and ends[row, step]:
                    running = 0.0
            self.returns[int(uid)] = running
        self.stats.update(torch.from_numpy(returns).reshape(-1))
        return rewards / self.std

    @property
    def std(self) -> float:
        """The running std of the intrinsic return."""
        return float(self.stats.std)

    def state_dict(self) -> dict[str, Any]:
        """The statistics and each env's return so far, for checkpoints."""
        return {"stats": self.stats.state_dict(), "returns": dict(self.returns)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` saved."""
        self.stats.load_state_dict(state["stats"])
        self.returns = {int(uid): float(value) for uid, value in state.get("returns", {}).items()}


def stream_targets(rewards: torch.Tensor, ends: torch.Tensor, values: torch.Tensor, valids: torch.Tensor,
                   gamma: float, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One stream's GAE advantages and value targets [N, T], as sample-factory computes the one stream's:
    ``rewards``, ``ends`` [N, T] (where this stream's return stops), ``values``, ``valids`` [N, T+1]."""
    advantages = gae_advantages(rewards, ends, values, valids, gamma, gae_lambda)
    return advantages, advantages + valids[:, :-1] * values[:, :-1]


@dataclass(frozen=True)
class RewardStreams:
    """What the learner needs of a two-stream run: the coefficients, the intrinsic discount and whether the
    intrinsic return is episodic, and GAE's lambda (sample-factory's, shared by both streams)."""

    ext_coef: float
    int_coef: float
    gamma: float
    episodic: bool
    gae_lambda: float

    def intrinsic_values(self, actor_critic: TwoStreamActorCritic, batch: Mapping[str, Any]) -> torch.Tensor:
        """The intrinsic head's values [N, T+1] of the batch's steps, from their stored GRU states. In eval
        mode, so input normalisation (where set) does not count the batch twice."""
        obs, states = batch["obs"], batch["rnn_states"]
        n, steps = states.shape[:2]
        was_training = actor_critic.training
        actor_critic.eval()
        try:
            flat = {key: value.reshape(n * steps, *value.shape[2:]) for key, value in obs.items()}
            actor_critic(prepare_and_normalize_obs(actor_critic, flat), states.reshape(n * steps, -1),
                         values_only=True)
        finally:
            actor_critic.train(was_training)
        return actor_critic.last_intrinsic_values.reshape(n, steps)

    def add_targets(self, buff: Any, rewards: torch.Tensor, episode_ends: torch.Tensor,
                    return_ends: torch.Tensor | None, values: torch.Tensor, valids: torch.Tensor) -> None:
        """Into sample-factory's prepared buffer (flat [N*T]): the intrinsic stream's targets and old values,
        and the advantages PPO follows, ``c_ext * A_ext + c_int * A_int`` (``advantages`` held A_ext).
        The intrinsic return ends where the method ends returns (``return_ends``, [N, T] or None) and, when
        episodic, at ``episode_ends``."""
        ends = episode_ends.bool() if self.episodic else torch.zeros_like(episode_ends, dtype=torch.bool)
        if return_ends is not None:
            ends = ends | return_ends
        advantages, returns = stream_targets(rewards, ends, values, valids, self.gamma, self.gae_lambda)
        size = advantages.numel()
        buff["advantages"] = self.ext_coef * buff["advantages"] + self.int_coef * advantages.reshape(size)
        buff["returns_int"] = returns.reshape(size)
        buff["values_int"] = values[:, :-1].reshape(size)
