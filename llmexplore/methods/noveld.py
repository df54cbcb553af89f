"""NovelD: reward crossing into novelty, once per episode (Zhang et al., 2021), trained online.

    r_int(s_t → s_{t+1}) = max(N(s_{t+1}) − α · N(s_t), 0) · 1[s_{t+1} is visited for the first time this episode]

N is RND's novelty (``rnd.py``: the same target and predictor networks over the same normalised keys),
taken as the L2 norm of the prediction error as in the published code; α = 0.5. The predictor trains
on RND's mean squared error by default; NovelD's and E3B's code train it on the mean L2 norm of the error
(``predictor_loss=norm``). The first-visit indicator counts states per env and episode in the learner
(``episodic.py``); a state is the exact bytes of ``count_keys`` (default: every key of the observation
the learner receives, which includes keys the policy network asks for, e.g. NetHack's ``glyphs`` with
``network=published``; the episode's first observation counts as visited). Rewards are divided by their
running standard deviation (``normalize``), after E3B's NovelD re-run on MiniHack (``reward_norm=int``,
whose IMPALA code divided by much more than the std; docs/METHODS.md, E3B); NovelD's own code did not
normalise. The defaults (α 0.5, c_int 0.5, normalised) combine NovelD's code with E3B's re-run, which
used α 0.1 and c_int 1 (docs/METHODS.md gives the options of each). ELLM's variant, used as its
``noveld`` flag, is ``alpha=1, first_visit=false``, with N the mean squared error instead.
A transition that ended an episode pays 0: its successor is the next episode's first observation.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import Field

from llmexplore.envs.base import ENV_UID_KEY
from llmexplore.methods.base import CheckContext, MethodContext, MethodPreset, RewardBatch, no_grad
from llmexplore.methods.registry import register_method
from llmexplore.methods.rnd import RND, NoveltyOptions

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import numpy as np
    import torch


class NovelDOptions(NoveltyOptions):
    alpha: float = Field(0.5, ge=0, le=100, allow_inf_nan=False,
                         description="α, how much of the novelty of s_t is subtracted (published 0.5; ELLM's flag: 1)")
    first_visit: bool = Field(True, description="pay only a state's first visit in the episode (published; ELLM's flag: off)")
    count_keys: tuple[str, ...] | None = Field(
        None, description="observation keys whose exact values make the episodic state (default: every key)")
    normalize: bool = Field(True, description="divide rewards by their running standard deviation")
    predictor_loss: Literal["mse", "norm"] = Field(
        "mse", description="the RND predictor's training loss: mean squared error (RND's) or the mean L2 "
                           "norm of the error (NovelD's and E3B's code)")
    preset: Literal["published", "code"] | None = Field(
        None, description="published settings by name, filling the options not given: 'published' E3B's MiniHack "
                          "re-run of NovelD (α 0.1, L2-norm predictor loss, normalised, c_int 1), 'code' NovelD's "
                          "own code defaults (α 0.5, L2-norm loss, not normalised, c_int 0.5)")


@register_method
class NovelD(RND):
    name = "noveld"
    display_name = "NovelD"
    description = "NovelD: positive novelty difference of RND, on first visits within an episode (LM-free)"
    default_int_coef = 0.5  # the published code's default coefficient
    reward_changes_state = True  # the episodes' visited sets and the reward statistics
    reward_streams = 1  # NovelD's code (torchbeast): one baseline on the summed reward, not RND's two heads
    Options = NovelDOptions
    presets = {
        "published": MethodPreset(
            {"alpha": 0.1, "predictor_loss": "norm", "normalize": True}, 1.0,
            "E3B's MiniHack re-run of NovelD (minihack/torchbeast/sweep_slurm_neurips_2022.py), normalised by the "
            "running std rather than its IMPALA divisor"),
        "code": MethodPreset(
            {"alpha": 0.5, "predictor_loss": "norm", "normalize": False}, 0.5,
            "NovelD's own code defaults (src/arguments.py, src/losses.py)"),
    }
    artefact_options = ("model_path",)

    def __init__(self, options: NovelDOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.common import RunningMeanStd

        super().__init__(options, context, obs_space)
        self.count_keys = options.count_keys or tuple(k for k in obs_space.spaces if k != ENV_UID_KEY)
        #: env uid -> digests of the states its current episode has visited
        self.visited: dict[int, set[bytes]] = {}
        self.reward_stats = RunningMeanStd(()).to(self.device)
        self._first_visit_share = (0, 0)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse ``count_keys`` that are not keys of the task's observation."""
        from llmexplore.errors import ConfigError, shown

        super().check_run(run)
        missing = [k for k in (run.options.count_keys or ()) if k not in run.obs_space.spaces]  # type: ignore[attr-defined]
        if missing:
            raise ConfigError(f"noveld's count_keys {shown(missing)} are not observation keys of task "
                              f"'{run.task.name}'",
                              hint=f"choose among {sorted(k for k in run.obs_space.spaces if k != ENV_UID_KEY)}")

    # -- novelty ------------------------------------------------------------------------------------
    def _training_loss(self, inputs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """RND's loss, or with ``predictor_loss=norm`` the mean of ‖f_pred(s) − f_target(s)‖₂ over the
        inputs; the squared errors [M] for the error statistics either way."""
        if self.options.predictor_loss == "mse":
            return super()._training_loss(inputs)
        difference = self.predictor(inputs) - self.target(inputs)
        return difference.norm(dim=1).mean(), difference.detach().pow(2).mean(dim=1)

    @no_grad
    def novelty(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """N(s) = ‖f_pred(s) − f_target(s)‖₂ of every observation, [N, T'] for obs [N, T', ...]."""
        n, t = next(iter(obs.values())).shape[:2]
        inputs = self._normalized(obs)
        return (self.predictor(inputs) - self.target(inputs)).norm(dim=1).reshape(n, t)

    def state_digests(self, obs: Mapping[str, torch.Tensor]) -> np.ndarray:
        """One digest per observation of the episodic state's bytes, [N, T'] of 16-byte strings."""
        import numpy as np

        n, t = next(iter(obs.values())).shape[:2]
        parts = [obs[k].reshape(n * t, -1).cpu().numpy() for k in self.count_keys]
        digests = np.empty(n * t, dtype=object)
        for i in range(n * t):
            h = hashlib.blake2b(digest_size=16)
            for part in parts:
                h.update(part[i].tobytes())
            digests[i] = h.digest()
        return digests.reshape(n, t)

    def first_visits(self, batch: RewardBatch) -> torch.Tensor:
        """[N, T] 1.0 where s_{t+1} is new to its episode (0 on the transition that ends one); updates
        each env's visited set in time order."""
        import torch

        from llmexplore.methods.episodic import rounds, row_envs

        n, t = batch.shape
        digests = self.state_digests(batch.obs)
        dones = batch.dones.cpu().numpy() != 0
        uids = row_envs(batch)
        first = torch.zeros(n, t)
        for rows in rounds(uids, n):
            for row in rows.tolist():
                uid = None if uids is None else int(uids[row])
                seen = self.visited.get(uid) if uid is not None else None
                if seen is None:  # an env not seen before starts an episode here
                    seen = {digests[row, 0]}
                for step in range(t):
                    state = digests[row, step + 1]
                    if dones[row, step]:
                        seen = {state}  # the next episode starts from this observation
                        continue
                    if state not in seen:
                        seen.add(state)
                        first[row, step] = 1.0
                if uid is not None:
                    self.visited[uid] = seen
        return first.to(self.device)

    def novelty_difference(self, batch: RewardBatch) -> torch.Tensor:
        """max(N(s_{t+1}) − α·N(s_t), 0) of every transition, [N, T]."""
        novelty = self.novelty(batch.obs)  # [N, T+1]
        return (novelty[:, 1:] - self.options.alpha * novelty[:, :-1]).clamp_min(0.0)

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """[N, T] float32: the novelty difference (plus the weighted caption term), 0 on transitions
        that ended an episode and, with ``first_visit``, on states already visited this episode;
        over the running std with ``normalize``. Updates the visited sets and the reward statistics."""
        import torch

        raw = self.novelty_difference(batch)
        if self.language is not None:  # ELLM: each term clipped at 0 on its own, then weighed and added
            raw = raw + self.options.language_weight * self.language.novelty_difference(batch)
        within = (batch.dones.to(self.device) == 0).to(raw.dtype)
        if self.options.first_visit:
            first = self.first_visits(batch)
            self._first_visit_share = (self._first_visit_share[0] + int(first.sum()),
                                       self._first_visit_share[1] + first.numel())
            within = within * first
        raw = raw * within
        if not self.options.normalize:
            return raw
        self.reward_stats.update(raw)
        return (raw / self.reward_stats.std.to(raw.dtype)).to(torch.float32)

    def metrics(self) -> dict[str, float]:
        """Envs with an open visited set and, when ``reward`` ran with ``first_visit``
        since the last call, the share of first visits (which then restarts)."""
        seen, total = self._first_visit_share
        self._first_visit_share = (0, 0)
        out = {"noveld_open_episodes": float(len(self.visited))}
        if total:
            out["noveld_first_visit_share"] = seen / total
        return out

    # -- state ---------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """RND's state and the reward statistics. The per-env visited sets are not kept: a resumed run
        builds its envs anew and each starts a new episode, with nothing visited yet."""
        state = super().state_dict()
        state["reward_stats"] = self.reward_stats.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore RND's state and the reward statistics; every env's visited set is dropped."""
        super().load_state_dict(state)
        self.reward_stats.load_state_dict(state["reward_stats"])
        self.visited = {}

    def state_summary(self) -> dict[str, Any]:
        """How many rewards the running statistics have taken in, and their standard deviation."""
        return {"rewards_seen": int(self.reward_stats.count), "reward_std": float(self.reward_stats.std)}
