"""E3B: exploration via elliptical episodic bonuses (Henaff et al., 2022), trained online in the learner.

Each transition pays how far its successor's embedding lies outside the ellipse spanned by the
embeddings of the episode's earlier observations:

    b_t = φ(s_{t+1})ᵀ C_t⁻¹ φ(s_{t+1}),    C_t = λI + Σ_{i≤t} φ(s_i) φ(s_i)ᵀ,

with C_t⁻¹ kept per env, started at I/λ and updated by rank one (Sherman–Morrison) after each bonus,
``C⁻¹ ← C⁻¹ − u uᵀ / (1 + b)`` with ``u = C⁻¹ φ``, and reset when an episode starts (its first
observation enters C at once). The transition that ends an episode pays 0: what follows it is the next
episode's first observation. The IMPALA code behind the paper paid φ(s_t)'s bonus on transition t, and
0 on an episode's first step (the authors' sample-factory version pays that one, ‖φ(s_0)‖²/λ);
paying φ(s_{t+1})'s on transition t is the suite's convention (docs/METHODS.md, "Whose observation
pays"): the same bonuses, one step earlier. Bonuses are divided by their running standard deviation
(``normalize``), as the sample-factory version does; the IMPALA code's ``reward_norm=int`` divided by a
much larger number (its running moments counted T, not T·B, bonuses per batch; docs/METHODS.md).

φ is the family's small policy encoder (``inverse_dynamics.py``) trained by inverse dynamics on every
learner batch; by default it ends in its linear layer, where the published φ ends in a ReLU (IMPALA) or a
LayerNorm (sample-factory): ``embedding_output``. The authors clipped the gradients of φ and of the
inverse head; here ``max_grad_norm`` does, off by default. The bonus is computed in the learner on the
batch's own steps, env by env (``episodic.py``), with the φ of that moment, as the authors'
sample-factory version does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import Field

from llmexplore.methods.base import (CheckContext, IntrinsicReward, MethodContext, MethodOptions, MethodPreset,
                                     RewardBatch)
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import numpy as np
    import torch


class E3BOptions(MethodOptions):
    ridge: float = Field(0.1, gt=0, allow_inf_nan=False, description="λ of C_0 = λI (published 0.1)")
    embed_dim: int = Field(256, gt=0, le=4096,
                           description="size of the embedding φ (published: 1,024 with IMPALA, 256 with APPO)")
    lr: float = Field(1e-4, gt=0, allow_inf_nan=False, description="Adam learning rate of φ and the inverse head")
    network: str = Field("small", description="the family's policy network φ copies (its architecture, fresh weights)")
    normalize: bool = Field(True, description="divide bonuses by their running standard deviation (the "
                                              "sample-factory version; the IMPALA code's divisor was larger)")
    precision: Literal["float32", "float64"] = Field(
        "float64", description="dtype of the per-env C⁻¹: float64 keeps Sherman-Morrison exact over long episodes")
    embedding_output: Literal["linear", "relu", "layernorm"] = Field(
        "linear", description="what ends φ: its linear layer alone, a ReLU (the paper's IMPALA code) or a "
                              "LayerNorm (the authors' sample-factory version)")
    max_grad_norm: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="clip the gradient norm of φ and of the inverse head, each on its own (published: 40 "
                    "with IMPALA, 4 with sample-factory); null: no clipping")
    preset: Literal["published", "sample-factory"] | None = Field(
        None, description="published settings by name, filling the options not given: 'published' the paper's "
                          "MiniHack code (φ ends in a ReLU, gradients clipped at 40, c_int 1), 'sample-factory' "
                          "the authors' sample-factory version (a LayerNorm, clipped at 4, c_int 1); both normalise "
                          "by the running std (docs/METHODS.md, E3B, Deviations)")


@register_method
class E3B(IntrinsicReward):
    name = "e3b"
    display_name = "E3B"
    description = "E3B: elliptical episodic bonus in an inverse-dynamics embedding (LM-free)"
    default_int_coef = 1.0  # published on MiniHack, with normalised bonuses
    update_beside_policy = True  # update reads the batch and trains its own networks only
    reward_changes_state = True  # each env's C⁻¹ and the bonus statistics
    Options = E3BOptions
    presets = {
        "published": MethodPreset(
            {"embedding_output": "relu", "max_grad_norm": 40.0}, 1.0,
            "E3B's IMPALA code behind the paper's MiniHack curves (src/models.py, src/arguments.py); its bonus "
            "divisor is not reproduced (the running std here, see Deviations)"),
        "sample-factory": MethodPreset(
            {"embedding_output": "layernorm", "max_grad_norm": 4.0}, 1.0,
            "the authors' sample-factory version of E3B for MiniHack (train_minihack.py, learner.py)"),
    }

    def __init__(self, options: E3BOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.common import RunningMeanStd
        from llmexplore.methods.inverse_dynamics import InverseDynamics, action_count

        super().__init__(options, context, obs_space)
        torch.manual_seed(context.seed)
        self.model = InverseDynamics(context.task, obs_space, options.network, options.embed_dim,
                                     action_count(context),
                                     embedding_output=options.embedding_output).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=options.lr)
        self.dtype = getattr(torch, options.precision)
        #: env uid -> C⁻¹ of its current episode, [D, D]
        self.inverse_covariance: dict[int, torch.Tensor] = {}
        self.bonus_stats = RunningMeanStd(()).to(self.device)
        self._bonus_sum, self._bonus_count = 0.0, 0

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse an observation that the family encoder behind φ cannot read."""
        super().check_run(run)
        check_embedding(cls.name, run)

    # -- the bonus: b_t = φ(s_{t+1})ᵀ C_t⁻¹ φ(s_{t+1}) -------------------------------------------------
    def _fresh(self, count: int) -> torch.Tensor:
        """C⁻¹ of an episode that has seen nothing yet, (λI)⁻¹ = I/λ, ``count`` times: [count, D, D]."""
        import torch

        eye = torch.eye(self.options.embed_dim, dtype=self.dtype, device=self.device) / self.options.ridge
        return eye.expand(count, -1, -1).clone()

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """[N, T] bonuses (normalised unless ``normalize`` is off). Changes state (``reward_changes_state``):
        each env's C⁻¹ absorbs the batch's observations, and the bonus statistics take in its bonuses. The
        embedding pass, with its graph, is carried to ``update``, which trains φ on it."""
        phi = self._embed(batch)
        self.carry(batch, phi)
        bonus = self.bonuses(batch, phi.detach().to(self.dtype))
        self._bonus_sum += float(bonus.sum())
        self._bonus_count += bonus.numel()
        if not self.options.normalize:
            return bonus.float()
        self.bonus_stats.update(bonus)
        return (bonus / self.bonus_stats.std).float()

    def raw_bonus(self, batch: RewardBatch) -> torch.Tensor:
        """b_t of every transition, [N, T] (``precision`` dtype), env by env in time order."""
        import torch

        with torch.no_grad():
            return self.bonuses(batch, self._embed(batch).detach().to(self.dtype))

    def bonuses(self, batch: RewardBatch, phi: torch.Tensor) -> torch.Tensor:
        """b_t of every transition from φ of every observation (phi [N, T+1, D]): the rows of one env go
        through its episode's C⁻¹ in batch order (``episodic.rounds``)."""
        import torch

        from llmexplore.methods.episodic import rounds, row_envs

        n, t = batch.shape
        uids = row_envs(batch)
        bonus = torch.zeros(n, t, dtype=self.dtype, device=self.device)
        dones = batch.dones.to(self.device) != 0
        for rows in rounds(uids, n):
            bonus[rows] = self._episode_bonuses(phi[rows], dones[rows], None if uids is None else uids[rows])
        return bonus

    def _embed(self, batch: RewardBatch) -> torch.Tensor:
        """φ of every observation, [N, T+1, D], with gradients (``update`` trains on this very pass; the
        bonus uses φ as it was before the step, as when the two passes were apart)."""
        import torch

        from llmexplore.methods.inverse_dynamics import flat_steps

        n, t = batch.shape
        with torch.enable_grad():
            return self.model.embed(flat_steps(batch.obs)).reshape(n, t + 1, -1)

    def _episode_bonuses(self, phi: torch.Tensor, dones: torch.Tensor, uids: np.ndarray | None) -> torch.Tensor:
        """Bonuses of R rows, one per env: phi [R, T+1, D] (index 0: the observation the row starts from),
        dones [R, T] -> [R, T]. Each row goes on its env's open episode, with that episode's C⁻¹; a row of
        an env not seen before (or without env uids) opens an episode with its first observation.

        Rows that go on an episode without ending it absorb their observations in one ``absorb_block``
        together; a row with an episode end is cut into its episodes (``_absorb_row``)."""
        import torch

        r, t1, _ = phi.shape
        envs = uids.tolist() if uids is not None else [None] * r
        open_episode = [self.inverse_covariance.get(int(uid)) if uid is not None else None for uid in envs]
        cov_inv = torch.stack([c if c is not None else self._fresh(1)[0] for c in open_episode])
        plain = [i for i in range(r) if open_episode[i] is not None and not bool(dones[i].any())]
        if len(plain) == r:  # the usual batch: every row goes on an episode, no copy out and back
            bonus, cov_inv = absorb_block(cov_inv, phi[:, 1:].contiguous())
        else:
            bonus = torch.zeros(r, t1 - 1, dtype=phi.dtype, device=phi.device)
            if plain:
                rows = torch.tensor(plain, device=phi.device)
                bonus[rows], cov_inv[rows] = absorb_block(cov_inv[rows], phi[rows, 1:])
            for i in sorted(set(range(r)) - set(plain)):
                cov_inv[i] = self._absorb_row(open_episode[i], phi[i], dones[i], bonus[i])
        for row, uid in enumerate(envs):
            if uid is not None:
                self.inverse_covariance[int(uid)] = cov_inv[row]
        return bonus

    def _absorb_row(self, cov_inv: torch.Tensor | None, phi: torch.Tensor, dones: torch.Tensor,
                    bonus: torch.Tensor) -> torch.Tensor:
        """One row cut into its episodes: phi [T+1, D], dones [T]; fills bonus [T] in place and returns the
        C⁻¹ of the episode the row ends in. ``cov_inv``: C⁻¹ of the episode the row goes on, None: the row
        opens one with phi[0]."""
        current = cov_inv
        for piece in episode_pieces(dones.tolist(), goes_on=cov_inv is not None):
            if piece.opens:
                current = self._fresh(1)[0]
            paid, absorbed = absorb_block(current.unsqueeze(0), phi[[s + 1 for s in piece.steps]].unsqueeze(0))
            current = absorbed[0]
            for k, step in enumerate(piece.steps):
                if not (piece.opens and k == 0):  # an episode's first observation enters C without paying
                    bonus[step] = paid[0, k]
        assert current is not None
        return current

    # -- training φ ----------------------------------------------------------------------------------
    def update(self, batch: RewardBatch) -> dict[str, float]:
        """One Adam step of φ and the inverse head on the within-episode transitions, reusing
        ``reward``'s embedding pass of the same batch; with ``max_grad_norm``, each one's gradient is
        clipped first, as both of the authors' codes do."""
        from llmexplore.methods.inverse_dynamics import clip_gradients, inverse_loss, within_episode

        phi_all = self.carried(batch)
        if phi_all is None:  # ``reward`` did not see this batch
            phi_all = self._embed(batch)
        n, t = batch.shape
        phi_now, phi_next = phi_all[:, :-1].reshape(n * t, -1), phi_all[:, 1:].reshape(n * t, -1)
        keep = within_episode(batch.dones.to(self.device))
        loss, accuracy = inverse_loss(self.model, phi_now, phi_next, batch.actions.to(self.device), keep)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_gradients([self.model.embed.parameters(), self.model.inverse.parameters()],
                       self.options.max_grad_norm)
        self.optimizer.step()
        return {"e3b_inverse_loss": float(loss.detach()), "e3b_inverse_accuracy": accuracy}

    def metrics(self) -> dict[str, float]:
        """Mean raw bonus since the last call (NaN if none; the sum restarts) and how many envs hold a C⁻¹."""
        mean = self._bonus_sum / self._bonus_count if self._bonus_count else float("nan")
        self._bonus_sum, self._bonus_count = 0.0, 0
        return {"e3b_bonus_mean": mean, "e3b_open_episodes": float(len(self.inverse_covariance))}

    # -- state -----------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The embedding, its optimiser and the bonus statistics. The per-env C⁻¹ are not kept: a resumed
        run builds its envs anew and each starts a new episode, whose ellipse starts empty."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "bonus_stats": self.bonus_stats.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore embedding, optimiser and bonus statistics; every env's C⁻¹ is dropped."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.bonus_stats.load_state_dict(state["bonus_stats"])
        self.inverse_covariance = {}

    def state_summary(self) -> dict[str, Any]:
        """How many bonuses the running statistics have taken in, and their standard deviation."""
        return {"bonuses_seen": int(self.bonus_stats.count), "bonus_std": float(self.bonus_stats.std)}


@dataclass(frozen=True)
class EpisodePiece:
    """A stretch of a row inside one episode: the transitions whose next observation it absorbs, in order
    (step -1: the row's own first observation). ``opens``: its first observation starts the episode."""

    opens: bool
    steps: tuple[int, ...]


def episode_pieces(dones: list[bool], goes_on: bool) -> list[EpisodePiece]:
    """A row's transitions cut at episode ends (dones [T]): the observation after an ending transition opens
    the next episode. ``goes_on``: the row continues an episode; else its first observation opens one.
    Pieces without a transition to absorb are left out.

    >>> episode_pieces([False, True, False], goes_on=True)
    [EpisodePiece(opens=False, steps=(0,)), EpisodePiece(opens=True, steps=(1, 2))]
    """
    pieces = [EpisodePiece(not goes_on, () if goes_on else (-1,))]
    for step, done in enumerate(dones):
        if done:
            pieces.append(EpisodePiece(True, (step,)))
        else:
            pieces[-1] = EpisodePiece(pieces[-1].opens, pieces[-1].steps + (step,))
    return [piece for piece in pieces if piece.steps]


def check_embedding(method: str, run: CheckContext) -> None:
    """Refuse, before any work, an observation the family encoder that φ copies cannot read."""
    from llmexplore.errors import ConfigError
    from llmexplore.methods.inverse_dynamics import family_encoder

    try:
        family_encoder(run.task, run.obs_space, run.options.network)  # type: ignore[attr-defined]
    except KeyError as exc:
        raise ConfigError(
            f"method '{method}' embeds states with the '{run.options.network}' network of family "  # type: ignore[attr-defined]
            f"'{run.task.family}', which reads the observation key {exc}, absent from task '{run.task.name}'",
            hint="choose another `network` option, or a task whose observation has that key") from None


def absorb_block(cov_inv: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Absorb k embeddings in order, at once: the bonuses b_j = h_jᵀ (C + Σ_{i<j} h_i h_iᵀ)⁻¹ h_j and
    the final (C + HᵀH)⁻¹. cov_inv A = C⁻¹ [R, D, D], h [R, k, D] -> (b [R, k], [R, D, D]).

    Why it works: with G = H A Hᵀ, the Cholesky factor L of M = I + G has L_jj² = 1 + b_j (the Schur
    complements of M are Woodbury's form of each rank-one step), and (C + HᵀH)⁻¹ = A − (HA)ᵀ M⁻¹ (HA).
    It gives the sequential Sherman–Morrison results with k-row matrix products instead of k steps.
    """
    import torch

    w = h @ cov_inv                                                       # [R, k, D]
    m = w @ h.transpose(1, 2)
    m = m + torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)          # [R, k, k]
    factor = torch.linalg.cholesky(m)
    bonus = (factor.diagonal(dim1=1, dim2=2).pow(2) - 1.0).clamp_min(0.0)  # [R, k]
    correction = w.transpose(1, 2) @ torch.cholesky_solve(w, factor)          # [R, D, D]
    updated = torch.sub(cov_inv, correction, out=correction)  # in place: [R, D, D] arrays are the cost here
    return bonus, (updated + updated.transpose(1, 2)).mul_(0.5)
