"""The ``motif`` method: a frozen reward model trained from LM preferences drives RL.

For the message m_t of the observation a transition led to:

    r_hat = (r(m_t) - mean) / std
    r_int = 1[r_hat > eps] * r_hat / N_ep(m_t)^beta

mean and std are the frequency-weighted statistics saved with the reward model, eps is
the saved z-scored reward quantile at ``eps_quantile`` (linear interpolation between the
saved grid points, so any quantile in (0, 1) works; 0 turns the threshold off, as the
published "0.0"), and N_ep is the episodic count of the exact message, this step
included, counted in the rollout workers by ``EpisodicMessageCount``.

Differences from the published learner, on purpose: the reward belongs to the
observation the action led to (our batch convention), so steps that ended an episode,
whose next observation already starts the next episode, get 0; the quantile is
interpolated rather than looked up on the 0.05 grid; and the model runs once per
distinct message of a batch with a per-message cache (the model is frozen, so cached
values are exact); that part lives in ``scorer.py`` and MaestroMotif reuses it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from pydantic import Field

from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY, EpisodicMessageCount
from llmexplore.errors import ConfigError, DataError
from llmexplore.methods.base import (
    CheckContext,
    IntrinsicReward,
    MethodContext,
    MethodOptions,
    RewardBatch,
    no_grad,
)
from llmexplore.methods import message_text
from llmexplore.methods.motif import questions  # noqa: F401  registers Motif's question kind with the LM layer
from llmexplore.methods.motif.artifacts import check_reward_model_dir, reward_model_origin
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch

    from llmexplore.envs.base import TaskSpec


class MotifOptions(MethodOptions):
    reward_model: str = Field(..., description="folder written by `llmexplore motif train-reward`")
    eps_quantile: float = Field(0.5, ge=0, lt=1, description="threshold quantile of the z-scored reward (0: none)")
    beta: float = Field(3.0, ge=0, description="exponent of the episodic message count")
    cache_size: int = Field(200_000, ge=0, description="messages whose reward is kept between batches")


@register_method
class Motif(IntrinsicReward):
    name = "motif"
    display_name = "Motif"
    description = "Motif: reward model distilled from LM preferences over messages, / episodic count^beta"
    required_keys = ("message",)
    default_int_coef = 0.1
    Options = MotifOptions
    artefact_options = ("reward_model",)

    def __init__(self, options: MotifOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.motif.scorer import RewardScorer

        super().__init__(options, context, obs_space)
        self.scorer = RewardScorer(options.reward_model, self.device, options.eps_quantile,
                                   options.cache_size)
        self.model_id = self.scorer.model_id
        # steps, distinct per batch summed, batches, cache hits, rewarded steps, seconds in reward()
        self._counters = np.zeros(6)

    @classmethod
    def artefact_origins(cls, options: MotifOptions) -> dict[str, dict[str, Any]]:
        """The reward model's labels (annotation, digest) and its pairs' collection (task, seed, the
        collecting policy: a checkpoint by sha256), from its manifest; {} for a model made before manifests
        said so, or one that cannot be read (the run's own check names that)."""
        return {"reward_model": origin} if (origin := reward_model_origin(options.reward_model)) else {}

    @property
    def eps(self) -> float:
        """The threshold on r_hat (the saved quantile at ``eps_quantile``; -inf without one)."""
        return self.scorer.eps

    @classmethod
    def needed_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        """``message``, unless the task's family writes it (``methods/message_text.py``)."""
        return message_text.needed_keys(task)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse a family with no text to judge, and a ``reward_model`` folder that is missing or incomplete."""
        super().check_run(run)
        message_text.message_text(run.task, cls.name)
        check_reward_model_dir(run.options.reward_model)

    @classmethod
    def wrap_env(cls, env: gym.Env, options: MotifOptions, context: MethodContext) -> gym.Env:
        """Add the family's ``message`` where the game prints none, and the episodic message count N_ep(m) the
        reward divides by, kept in the workers."""
        return EpisodicMessageCount(message_text.with_message(env, context.task, cls.name))

    # -- learner side ----------------------------------------------------------------------
    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """1[r_hat > eps] · r_hat / N_ep(m)^beta of each next message, [N, T]
        float32 on the batch's device; 0 on transitions that end an episode."""
        started = time.perf_counter()
        n, t = batch.shape
        nxt = batch.next_obs
        if EPISODIC_MESSAGE_COUNT_KEY not in nxt:
            raise ConfigError(f"motif needs the observation key '{EPISODIC_MESSAGE_COUNT_KEY}' added by its env wrapper")
        hits_before = self.scorer.hits
        r_hat, distinct = self.scorer.r_hat(nxt["message"])
        r_hat = self.scorer.threshold(r_hat.reshape(n, t).to(batch.dones.device))
        counts = nxt[EPISODIC_MESSAGE_COUNT_KEY].reshape(n, t).float().to(r_hat.device).clamp_min(1.0)
        r_int = r_hat / counts.pow(self.options.beta)
        r_int = r_int * (1.0 - batch.dones.float())
        self._counters += (n * t, distinct, 1, self.scorer.hits - hits_before, float((r_int != 0).sum()),
                           time.perf_counter() - started)
        return r_int

    def metrics(self) -> dict[str, float]:
        """Since the last call: distinct messages per step, cache hit rate, share of
        rewarded steps, cache size and ms per batch; {} when no batch was scored."""
        steps, distinct, batches, hits, rewarded, seconds = self._counters
        if not batches:
            return {}
        out = {"motif_distinct_share": distinct / steps, "motif_cache_hit_rate": hits / max(distinct, 1),
               "motif_rewarded_share": rewarded / steps, "motif_cache_size": float(self.scorer.cached),
               "motif_reward_ms_per_batch": 1000 * seconds / batches}
        self._counters[:] = 0
        return out

    def state_dict(self) -> dict[str, Any]:
        """No weights (the model is frozen): the reward model's folder and id, for the resume check."""
        return {"reward_model": str(Path(self.options.reward_model).resolve()), "model_id": self.model_id}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """DataError when the run was trained with another reward model (by id); loads nothing."""
        if state.get("model_id") not in (None, self.model_id):
            raise DataError(
                f"this run was trained with reward model {state.get('model_id')} from {state.get('reward_model')}, "
                f"but {self.options.reward_model} now holds model {self.model_id}",
                hint="resume with the original reward model, or start a new run directory",
            )
