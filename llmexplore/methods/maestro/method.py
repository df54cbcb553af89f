"""The ``maestro`` method: one skill-conditioned policy, each skill rewarded by its own Motif model.

Actor side (``wrap_env``): ``EpisodicMessageCount`` and ``SkillWrapper``, which runs the
generated initiation/termination functions and the policy over skills (call-and-return) and
adds the one-hot key ``skill``, which the policy network conditions on (``policy_keys``).

Learner side: for the transition from o_t to o_{t+1}, with k the skill that acted at t (the
``skill`` key of o_t) and m the message of o_{t+1}, Motif's reward with skill k's model:

    r_int = 1[r_hat_k(m) > eps_k] * r_hat_k(m) / N(m)^beta,   r_hat_k = (r_k(m) - mean_k) / std_k

with each model's own normalisation and threshold (``motif.scorer.RewardScorer``) and N the
message count, per episode as published or per skill activation (``count_scope``).

Returns (``returns``): by default each activation's return ends where the skill hands over
(``return_ends``: the learner shows GAE an end there, the recurrent state is not reset), so each
skill maximises its own reward over its own activation, as an option in call-and-return
execution does. With ``returns: episode`` returns run over whole episodes, so a skill is also
credited with what later skills earn (e.g. staying alive for them).

eps_k is the saved quantile of model k's z-scored rewards over unique messages (``eps_quantile``)
but never below ``eps_floor`` (0 by default). Why the floor: the z-scoring mean is frequency-
weighted, so it sits near the reward of the most frequent messages (the empty message above all),
while the quantile is over unique messages. When most unique messages score below the frequent
ones the saved quantile is negative and the published rule pays mostly negative rewards (we
measured -1.6 to -2.1 standard deviations for all five skill models trained briefly on random-play
data; +0.6 to +0.9 after longer training, where the floor changes nothing). With the floor a skill
is paid only for messages better than typical for its goal. ``eps_floor: null`` restores the
published rule.

Differences from the published code, on purpose: the reward belongs to the observation the
action led to (our batch convention; the published learner scored o_t); descender and
ascender give up after a time limit in our reference code (the published ones had none,
so a skill that could not find stairs kept control for the rest of the episode); the
generated code runs in a validated, metered sandbox instead of being imported.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping

import numpy as np
from pydantic import Field, field_validator

from llmexplore.envs.base import ENV_UID_KEY, TaskSpec
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
from llmexplore.methods.maestro.codegen import TRAINING
from llmexplore.methods.maestro.interface import RAW_KEYS
from llmexplore.methods.maestro.program import SkillProgram
from llmexplore.methods.maestro.sandbox import Limits
from llmexplore.methods.maestro.skills import SKILLS, check_skills
from llmexplore.methods.maestro.wrapper import SKILL_KEY, SKILL_STARTED_KEY, SkillWrapper
from llmexplore.methods.motif.artifacts import check_reward_model_dir
from llmexplore.methods.registry import register_method
from llmexplore.methods.segments import SegmentSums

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch


class MaestroOptions(MethodOptions):
    reward_models: str = Field(..., description="folder holding one Motif reward-model folder per skill, "
                                                "named after it (e.g. models/maestro/rewards/descender)")
    code: str = Field(..., description="code folder written by `llmexplore maestro generate`")
    skills: list[str] = Field(list(SKILLS), description="skills to train (default: all five)")
    policy: str = Field(TRAINING, description="policy over skills: training, or task:<name> (evaluation)")
    eps_quantile: float = Field(0.5, ge=0, lt=1,
                                description="threshold quantile of each skill's z-scored reward")
    eps_floor: float | None = Field(
        0.0, description="never pay r_hat at or below this z-score, whatever the quantile says (None: "
                         "the published rule alone, which pays negative rewards when eps is below 0)")
    beta: float = Field(3.0, ge=0, description="exponent of the message count")
    count_scope: Literal["episode", "activation"] = Field(
        "episode", description="message counts restart each episode (published) or each skill activation")
    returns: Literal["activation", "episode"] = Field(
        "activation", description="a skill's return ends when its activation ends (each skill maximises "
                                  "its own reward), or runs over the whole episode (credits later skills)")
    cache_size: int = Field(200_000, ge=0, description="messages whose reward is kept per skill")
    time_limit_ms: float = Field(50.0, gt=0, description="wall-time limit per call of generated code")

    @field_validator("skills")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        try:
            return list(check_skills(value))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None


def reward_model_dir(options: MaestroOptions, skill: str) -> Path:
    """Skill ``skill``'s Motif reward-model folder, ``<reward_models>/<skill>``; not checked to exist."""
    return Path(options.reward_models).expanduser() / skill


def limits_of(options: MaestroOptions) -> Limits:
    """The default sandbox limits with the ``time_limit_ms`` wall-time limit per call of generated code."""
    return Limits(time_limit_s=options.time_limit_ms / 1000)


@register_method
class MaestroMotif(IntrinsicReward):
    name = "maestro"
    display_name = "MaestroMotif"
    description = ("MaestroMotif: skills with LM-written initiation/termination code, one Motif reward model "
                   "each")
    required_keys = ("message", "blstats")
    policy_keys = (SKILL_KEY,)
    default_int_coef = 0.1
    Options = MaestroOptions
    artefact_options = ("reward_models", "code")

    def __init__(self, options: MaestroOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.motif.scorer import RewardScorer

        super().__init__(options, context, obs_space)
        self.skills = tuple(options.skills)
        self.scorers = [RewardScorer(str(reward_model_dir(options, s)), self.device, options.eps_quantile,
                                     options.cache_size) for s in self.skills]
        if options.eps_floor is not None:
            for scorer in self.scorers:
                scorer.eps = max(scorer.eps, options.eps_floor)
        program = SkillProgram(options.code, self.skills, options.policy, limits_of(options))
        self.code_digest = program.digest()
        k = len(self.skills)
        # per skill: steps, sum r_int, sum r_hat, rewarded steps; and seconds in reward(), batches
        self._per_skill = np.zeros((k, 4))
        self._timing = np.zeros(2)
        # per skill: activations that ended, and the sum of their returns (r_int summed over each)
        self._activations = np.zeros((k, 2))
        self._activation_sums = SegmentSums()

    # -- checks before any work -------------------------------------------------------------------
    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Refuse non-NetHack tasks, a skill without a valid reward-model
        folder, and a code folder whose files are missing or fail validation."""
        options: MaestroOptions = run.options  # type: ignore[assignment]
        if run.task.family != "nethack":
            raise ConfigError(f"method 'maestro' runs on NetHack tasks only, not '{run.task.name}'",
                              hint="its skills and observation interface are NetHack's")
        super().check_run(run)
        for skill in options.skills:
            path = reward_model_dir(options, skill)
            if not path.is_dir():
                raise ConfigError(f"no reward model for skill '{skill}': {path} does not exist",
                                  hint="train one per skill (scripts/maestro_pipeline.sh, docs/maestro.md) "
                                       "or set method option reward_models to the folder holding them")
            check_reward_model_dir(path)
        SkillProgram(options.code, tuple(options.skills), options.policy, limits_of(options))

    # -- actor side -------------------------------------------------------------------------------
    @classmethod
    def env_keys(cls, task: TaskSpec, options: MaestroOptions) -> tuple[str, ...]:
        """NLE's ``glyphs`` and ``inv_strs``, which the observation interface reads in the workers."""
        return RAW_KEYS

    @classmethod
    def wrap_env(cls, env: gym.Env, options: MaestroOptions, context: MethodContext) -> gym.Env:
        """Add the episodic message count and the ``SkillWrapper``, which runs the generated
        code (call-and-return) and adds the ``skill`` and ``skill_started`` keys."""
        counts = EpisodicMessageCount(env)
        program = SkillProgram(options.code, tuple(options.skills), options.policy, limits_of(options))
        return SkillWrapper(counts, program, counts, options.count_scope, seed=context.seed)

    # -- learner side -----------------------------------------------------------------------------
    def active_skill(self, batch: RewardBatch) -> torch.Tensor:
        """[N, T] index of the skill that acted at each transition (from o_t's one-hot)."""
        if SKILL_KEY not in batch.obs:
            raise ConfigError(f"maestro needs the observation key '{SKILL_KEY}' added by its env wrapper")
        return batch.current_obs[SKILL_KEY].argmax(dim=-1)

    @no_grad
    def scored(self, batch: RewardBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(r_int, r_hat, skill index), each [N, T]: the reward, the raw z-scored model output of the
        acting skill's model, and which skill acted."""
        import torch

        n, t = batch.shape
        nxt = batch.next_obs
        if EPISODIC_MESSAGE_COUNT_KEY not in nxt:
            raise ConfigError(f"maestro needs the observation key '{EPISODIC_MESSAGE_COUNT_KEY}'")
        skill = self.active_skill(batch).reshape(-1).cpu()
        messages = nxt["message"].reshape(n * t, -1)
        r_hat = torch.zeros(n * t)
        kept = torch.zeros(n * t)
        for k, scorer in enumerate(self.scorers):
            mask = skill == k
            if bool(mask.any()):
                values, _ = scorer.r_hat(messages[mask])
                r_hat[mask] = values
                kept[mask] = scorer.threshold(values)
        counts = nxt[EPISODIC_MESSAGE_COUNT_KEY].reshape(n * t).float().cpu().clamp_min(1.0)
        live = 1.0 - batch.dones.reshape(n * t).float().cpu()
        r_int = kept / counts.pow(self.options.beta) * live
        return r_int.reshape(n, t), r_hat.reshape(n, t), skill.reshape(n, t)

    def activation_ends(self, batch: RewardBatch) -> torch.Tensor:
        """[N, T] bool: transition t is the last of its activation (the skill hands over after it, or
        the episode ends)."""
        if SKILL_STARTED_KEY not in batch.obs:
            raise ConfigError(f"maestro needs the observation key '{SKILL_STARTED_KEY}'",
                              hint="build the env with the method's wrapper (MaestroMotif.wrap_env)")
        return batch.next_obs[SKILL_STARTED_KEY][..., 0].bool() | batch.dones.bool()

    def return_ends(self, batch: RewardBatch) -> torch.Tensor | None:
        """[N, T] bool with ``returns: activation``: transitions after which
        the skill hands over mid-episode; None with ``returns: episode``."""
        if self.options.returns == "episode":
            return None
        return self.activation_ends(batch) & ~batch.dones.bool()

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """r_int from the acting skill's model, [N, T] float32 on the batch's device, 0 on
        transitions that end an episode; gathers the per-skill figures ``metrics`` reports."""
        started = time.perf_counter()
        r_int, r_hat, skill = self.scored(batch)
        live = (1.0 - batch.dones.float().cpu()).bool()
        for k in range(len(self.skills)):
            mask = (skill == k) & live
            steps = float(mask.sum())
            if steps:
                self._per_skill[k] += (steps, float(r_int[mask].sum()), float(r_hat[mask].sum()),
                                       float((r_int[mask] != 0).sum()))
        self._count_activations(batch, r_int, skill)
        self._timing += (time.perf_counter() - started, 1)
        return r_int.to(batch.dones.device)

    def _count_activations(self, batch: RewardBatch, r_int: torch.Tensor, skill: torch.Tensor) -> None:
        uid = batch.obs.get(ENV_UID_KEY)  # absent outside training (evaluation replays one episode per batch)
        uids = np.arange(len(r_int)) if uid is None else uid[:, 0, 0].cpu().numpy()
        ends = self.activation_ends(batch).cpu().numpy()
        for row, t, total in self._activation_sums.add(uids, r_int.numpy(), ends):
            self._activations[int(skill[row, t])] += (1.0, total)

    def metrics(self) -> dict[str, float]:
        """Per skill: ``maestro_reward_<skill>`` mean r_int of steps where it acted, ``maestro_rhat_<skill>``
        mean raw z-scored model output there, ``maestro_share_<skill>`` its share of steps,
        ``maestro_rewarded_<skill>`` share of its steps with a reward, ``maestro_ended_<skill>`` its
        activations that ended since the last report and ``maestro_return_<skill>`` their mean return
        (r_int summed over an activation: what the skill maximises with ``returns: activation``)."""
        seconds, batches = self._timing
        if not batches:
            return {}
        total = max(self._per_skill[:, 0].sum(), 1.0)
        out = {"maestro_reward_ms_per_batch": 1000 * seconds / batches}
        for k, skill in enumerate(self.skills):
            steps, r_int, r_hat, rewarded = self._per_skill[k]
            out[f"maestro_share_{skill}"] = steps / total
            if steps:
                out[f"maestro_reward_{skill}"] = r_int / steps
                out[f"maestro_rhat_{skill}"] = r_hat / steps
                out[f"maestro_rewarded_{skill}"] = rewarded / steps
            ended, returns = self._activations[k]
            out[f"maestro_ended_{skill}"] = ended
            if ended:
                out[f"maestro_return_{skill}"] = returns / ended
        self._per_skill[:] = 0
        self._activations[:] = 0
        self._timing[:] = 0
        return out

    def state_dict(self) -> dict[str, Any]:
        """No weights (the reward models are frozen): each skill's reward-model id
        and the code digest, so that a resume can check it runs the same ones."""
        return {"reward_models": {s: sc.model_id for s, sc in zip(self.skills, self.scorers)},
                "code": self.code_digest}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """DataError when a skill's reward model, or (for the training policy) the
        generated code, is not the one the run was trained with; loads nothing."""
        saved = state.get("reward_models") or {}
        ours = {s: sc.model_id for s, sc in zip(self.skills, self.scorers)}
        changed = [s for s in saved if ours.get(s) not in (None, saved[s])]
        if changed:
            raise DataError(f"this run was trained with other reward models for skill(s) "
                            f"{', '.join(changed)} than {self.options.reward_models} holds now",
                            hint="resume with the original reward models, or start a new run directory")
        if state.get("code") not in (None, self.code_digest) and self.options.policy == TRAINING:
            raise DataError(f"this run was trained with other generated code than {self.options.code} holds "
                            "now", hint="resume with the original code folder, or start a new run directory")

    def state_summary(self) -> dict[str, Any]:
        """Each skill's reward-model id and the code digest (``state_dict``)."""
        return self.state_dict()
