"""APT: active pre-training by particle-based entropy (Liu & Abbeel, 2021), trained online.

A representation f is learned contrastively: each observation must pick out its own
successor among the batch's successors (InfoNCE), as URLB's APT does. The intrinsic
reward of a transition is the particle estimate of entropy at its next observation,

    r_int = log(1 + mean distance to the k = 12 nearest neighbours of f(s') within the batch
                    / running mean of that distance),

so states far from the others in representation space pay more. Neighbours come from a
random subset of the batch (``reference_size``) to keep the distance matrix small on a CPU.

``representation=icm`` is the variant ELLM compared against on Crafter (its ``icm_apt`` baseline, after
URLB's ICM-APT): the representation is ICM's feature map (``icm.py``), trained by its inverse and forward
losses with equal weights, instead of the contrastive one; the particle reward is the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import Field

from llmexplore.methods.base import IntrinsicReward, MethodContext, MethodOptions, RewardBatch, no_grad
from llmexplore.methods.registry import register_method
from llmexplore.methods.rnd import novelty_keys

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch


class APTOptions(MethodOptions):
    representation: Literal["contrastive", "icm"] = Field(
        "contrastive", description="contrastive (APT, URLB) or icm (ELLM's icm_apt baseline: ICM's feature map)")
    keys: tuple[str, ...] | None = Field(None, description="observation keys the contrastive representation reads")
    k: int = Field(12, ge=1, le=1024, description="nearest neighbours in the particle estimate (published 12)")
    feature_dim: int = Field(64, gt=0, le=4096, description="size of the representation")
    lr: float = Field(1e-4, gt=0, allow_inf_nan=False, description="Adam learning rate of the representation")
    temperature: float = Field(0.5, gt=0, allow_inf_nan=False, description="InfoNCE temperature (contrastive)")
    reference_size: int = Field(1024, ge=16, le=65536, description="batch samples used as neighbours")


@register_method
class APT(IntrinsicReward):
    name = "apt"
    display_name = "APT"
    description = "APT: k-NN particle entropy in a contrastively learned representation (LM-free)"
    default_int_coef = 0.5
    update_beside_policy = True  # update reads the batch and trains its own networks only
    reward_changes_state = True  # the running mean distance takes in each batch's distances
    Options = APTOptions

    def __init__(self, options: APTOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.common import ObservationFeatures, RunningMeanStd

        super().__init__(options, context, obs_space)
        self.distance_stats = RunningMeanStd(()).to(self.device)
        self._generator = torch.Generator(device="cpu").manual_seed(context.seed)
        if options.representation == "icm":
            from llmexplore.methods.icm import ICM, ICMOptions

            # ELLM's icm_apt sums the forward and inverse losses: beta 0.5 weighs them equally
            self.icm: Any = ICM(ICMOptions(beta=0.5, embed_dim=options.feature_dim, lr=options.lr), context,
                                obs_space)
            return
        self.icm = None
        self.keys = self.needed_keys(context.task, options) or tuple(obs_space.spaces)
        spaces = {k: obs_space.spaces[k] for k in self.keys}
        torch.manual_seed(context.seed)
        self.encoder = ObservationFeatures(spaces, options.feature_dim).to(self.device)
        self.projector = torch.nn.Linear(options.feature_dim, options.feature_dim).to(self.device)
        params = list(self.encoder.parameters()) + list(self.projector.parameters())
        self.optimizer = torch.optim.Adam(params, lr=options.lr)

    @classmethod
    def check_run(cls, run) -> None:
        """With ``representation=icm``, also refuse an observation that ICM's family encoder cannot read."""
        super().check_run(run)
        if run.options.representation == "icm":
            from llmexplore.methods.e3b import check_embedding

            check_embedding(cls.name, run)

    @classmethod
    def needed_keys(cls, task, options: APTOptions) -> tuple[str, ...]:
        """The contrastive encoder's keys (``keys``, else the family's novelty keys);
        none for ``representation=icm``, whose encoder ``check_run`` checks instead."""
        if options.representation == "icm":
            return ()  # ICM's feature map reads what the family's encoder reads (checked in check_run)
        return tuple(options.keys or novelty_keys(task.family))

    def features(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The representation of observations [N, T, ...] -> [N*T, F]."""
        if self.icm is not None:
            from llmexplore.methods.inverse_dynamics import flat_steps

            return self.icm.model.embed(flat_steps(obs))
        return self.encoder(self._inputs(obs))

    def _inputs(self, obs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        from llmexplore.methods.common import flat_batch

        inputs = flat_batch(obs, self.keys)
        for key, value in inputs.items():
            if value.dim() == 4:  # images: bytes to [0, 1]
                inputs[key] = value / 255.0
        return inputs

    def knn_distance(self, features: torch.Tensor) -> torch.Tensor:
        """Mean distance of each row [N, F] to its k nearest other rows among a random reference subset
        of the batch, [N]. A row drawn into the subset is not its own neighbour (its column is masked);
        a row outside it keeps all of its nearest. k shrinks to the subset's size minus one when the batch
        is that small; a batch of one row gives 0."""
        import torch

        n = features.shape[0]
        size = min(self.options.reference_size, n)
        picked = torch.randperm(n, generator=self._generator)[:size].to(features.device)
        distances = torch.cdist(features, features[picked])
        distances[picked, torch.arange(size, device=features.device)] = float("inf")  # itself
        k = min(self.options.k, size - 1)  # a row in the subset has size - 1 others
        if k < 1:
            return features.new_zeros(n)
        nearest, _ = distances.topk(k, dim=1, largest=False)
        return nearest.mean(dim=1)

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """log(1 + k-NN distance of f(s') / running mean distance), [N, T] float32. Folds
        this batch's distances into the running mean first, so calling it changes state."""
        import torch

        n, t = batch.shape
        features = self.features(batch.next_obs)
        distance = self.knn_distance(features)
        self.distance_stats.update(distance)
        scaled = distance / self.distance_stats.mean.float().clamp_min(1e-8)
        return torch.log1p(scaled).reshape(n, t)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """One InfoNCE step of encoder and projector on within-episode (s, s') pairs, at most
        ``reference_size`` of them; with ``representation=icm``, ICM's training step instead."""
        import torch
        import torch.nn.functional as F

        if self.icm is not None:
            metrics = self.icm.update(batch)
            return {**{k.replace("icm_", "apt_icm_"): v for k, v in metrics.items()},
                    "apt_distance_mean": float(self.distance_stats.mean)}

        current = self.projector(self.encoder(self._inputs(batch.current_obs)))
        following = self.projector(self.encoder(self._inputs(batch.next_obs)))
        keep = batch.dones.reshape(-1) == 0  # an episode's last step has no successor in the batch
        current, following = F.normalize(current[keep], dim=1), F.normalize(following[keep], dim=1)
        if current.shape[0] > self.options.reference_size:
            pick = torch.randperm(current.shape[0], generator=self._generator)[: self.options.reference_size]
            current, following = current[pick.to(current.device)], following[pick.to(current.device)]
        logits = current @ following.T / self.options.temperature
        loss = F.cross_entropy(logits, torch.arange(logits.shape[0], device=logits.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"apt_contrastive_loss": float(loss.detach()), "apt_distance_mean": float(self.distance_stats.mean)}

    def state_dict(self) -> dict[str, Any]:
        """The distance statistics and the representation: encoder, projector and optimiser, or the ICM."""
        if self.icm is not None:
            return {"icm": self.icm.state_dict(), "distance_stats": self.distance_stats.state_dict()}
        return {"encoder": self.encoder.state_dict(), "projector": self.projector.state_dict(),
                "optimizer": self.optimizer.state_dict(), "distance_stats": self.distance_stats.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` saved under the same ``representation``."""
        if self.icm is not None:
            self.icm.load_state_dict(state["icm"])
            self.distance_stats.load_state_dict(state["distance_stats"])
            return
        self.encoder.load_state_dict(state["encoder"])
        self.projector.load_state_dict(state["projector"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.distance_stats.load_state_dict(state["distance_stats"])
