"""ICM: curiosity as the error of a forward model in an inverse-dynamics feature space (Pathak et al., 2017).

A feature map φ is trained jointly with an inverse model (a_t from φ(s_t), φ(s_{t+1})) and a forward
model (φ(s_{t+1}) from φ(s_t) and a_t):

    loss = (1 − β) · L_I + β · L_F,    L_I = cross-entropy of a_t,    L_F = ½ ‖f(φ(s_t), a_t) − φ(s_{t+1})‖²,
    r_int = ½ ‖f(φ(s_t), a_t) − φ(s_{t+1})‖²,

with β = 0.2; the published scale η = 0.01 is our ``c_int``. As in the published code, L_F's gradient
reaches φ as well as the forward model (``detach_target`` stops it at φ(s_{t+1}), as several later
implementations do). φ is the family's small policy encoder with a linear layer to 288 features, the
published feature size (the published encoder was four 3x3 convolutions on 42x42 grey frames).
A transition that ended an episode pays 0: its successor is the next episode's first observation.
The published code clipped the joint gradient norm of the ICM's networks at 40; here ``max_grad_norm``
does so, and is off by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from pydantic import Field

from llmexplore.methods.base import CheckContext, IntrinsicReward, MethodContext, MethodOptions, RewardBatch
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch


class ICMOptions(MethodOptions):
    beta: float = Field(0.2, ge=0, le=1, allow_inf_nan=False,
                        description="weight of the forward loss against the inverse loss (published 0.2)")
    embed_dim: int = Field(288, gt=0, le=4096, description="size of the feature map φ (published 288)")
    hidden: int = Field(256, gt=0, le=8192, description="hidden units of the forward and inverse models (published 256)")
    lr: float = Field(1e-4, gt=0, allow_inf_nan=False, description="Adam learning rate (published 1e-4)")
    network: str = Field("small", description="the family's policy network φ copies (its architecture, fresh weights)")
    detach_target: bool = Field(False, description="stop L_F's gradient at φ(s_{t+1}) (published: it flows)")
    max_grad_norm: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="clip the joint gradient norm of φ, the inverse and the forward model (published 40); "
                    "null: no clipping")


def _forward_model(embed_dim: int, num_actions: int, hidden: int) -> torch.nn.Module:
    """f(φ(s_t), one-hot a_t) -> φ̂(s_{t+1}): [M, D + A] -> [M, D]."""
    from torch import nn

    return nn.Sequential(nn.Linear(embed_dim + num_actions, hidden), nn.ReLU(), nn.Linear(hidden, embed_dim))


@register_method
class ICM(IntrinsicReward):
    name = "icm"
    display_name = "ICM"
    description = "ICM: forward-model error in an inverse-dynamics feature space (LM-free)"
    default_int_coef = 0.01  # η of the published reward
    update_beside_policy = True  # update reads the batch and trains its own networks only
    Options = ICMOptions

    def __init__(self, options: ICMOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.inverse_dynamics import InverseDynamics, action_count

        super().__init__(options, context, obs_space)
        torch.manual_seed(context.seed)
        self.num_actions = action_count(context)
        self.model = InverseDynamics(context.task, obs_space, options.network, options.embed_dim,
                                     self.num_actions, hidden=options.hidden).to(self.device)
        self.forward_model = _forward_model(options.embed_dim, self.num_actions, options.hidden).to(self.device)
        params = list(self.model.parameters()) + list(self.forward_model.parameters())
        self.optimizer = torch.optim.Adam(params, lr=options.lr)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse an observation that the family encoder behind φ cannot read."""
        from llmexplore.methods.e3b import check_embedding

        super().check_run(run)
        check_embedding(cls.name, run)

    def _embed_pairs(self, batch: RewardBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """φ(s_t) and φ(s_{t+1}) of every transition, [N*T, D] each, from one pass over [N, T+1], with
        gradients: ``reward`` carries this pass to the training step (the reward uses the networks before
        the step, as when the two passes were apart)."""
        import torch

        from llmexplore.methods.inverse_dynamics import flat_steps

        n, t = batch.shape
        with torch.enable_grad():  # the learner calls ``reward`` under no_grad: the slices need the graph too
            phi = self.model.embed(flat_steps(batch.obs)).reshape(n, t + 1, -1)
            return phi[:, :-1].reshape(n * t, -1), phi[:, 1:].reshape(n * t, -1)

    def _forward_errors(self, phi_now: torch.Tensor, phi_next: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """½‖f(φ(s_t), a_t) − φ(s_{t+1})‖² per transition, [M]."""
        import torch.nn.functional as F

        one_hot = F.one_hot(actions.reshape(-1).long(), self.num_actions).to(phi_now.dtype)
        predicted = self.forward_model(torch_cat(phi_now, one_hot))
        return 0.5 * (predicted - phi_next).pow(2).sum(dim=1)

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """Forward-model error ½‖f(φ(s_t), a_t) − φ(s_{t+1})‖², [N, T]; 0 where the transition ended
        an episode. Changes no state; carries the embedding pass (with its graph) to ``update``."""
        import torch

        from llmexplore.methods.inverse_dynamics import within_episode

        n, t = batch.shape
        pair = self._embed_pairs(batch)
        self.carry(batch, pair)
        phi_now, phi_next = (phi.detach() for phi in pair)
        with torch.no_grad():
            errors = self._forward_errors(phi_now, phi_next, batch.actions.to(self.device))
            errors = errors * within_episode(batch.dones.to(self.device)).to(errors.dtype)
        return errors.reshape(n, t)

    def losses(self, batch: RewardBatch) -> dict[str, torch.Tensor]:
        """The inverse loss, the forward loss and their β-weighted sum (with gradients), over the batch's
        within-episode transitions."""
        from llmexplore.methods.inverse_dynamics import inverse_loss, within_episode

        phi_now, phi_next = self.carried(batch) or self._embed_pairs(batch)  # the pass ``reward`` carried
        keep = within_episode(batch.dones.to(self.device))
        actions = batch.actions.to(self.device)
        inverse, accuracy = inverse_loss(self.model, phi_now, phi_next, actions, keep)
        target = phi_next.detach() if self.options.detach_target else phi_next
        forward_errors = self._forward_errors(phi_now, target, actions)[keep]
        forward = forward_errors.mean() if forward_errors.numel() else inverse * 0.0
        beta = self.options.beta
        return {"inverse": inverse, "forward": forward, "total": (1 - beta) * inverse + beta * forward,
                "accuracy": phi_now.new_tensor(accuracy)}

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """One Adam step of φ, inverse head and forward model on (1 − β)·L_I + β·L_F, reusing
        ``reward``'s embedding pass when given the same batch; with ``max_grad_norm``, their joint
        gradient norm is clipped first (Pathak et al.'s code clips the ICM's variables together)."""
        from llmexplore.methods.inverse_dynamics import clip_gradients

        losses = self.losses(batch)
        self.optimizer.zero_grad(set_to_none=True)
        losses["total"].backward()
        clip_gradients([list(self.model.parameters()) + list(self.forward_model.parameters())],
                       self.options.max_grad_norm)
        self.optimizer.step()
        return {"icm_inverse_loss": float(losses["inverse"].detach()),
                "icm_forward_loss": float(losses["forward"].detach()),
                "icm_inverse_accuracy": float(losses["accuracy"])}

    def state_dict(self) -> dict[str, Any]:
        """φ with its inverse head, the forward model and their shared optimiser."""
        return {"model": self.model.state_dict(), "forward_model": self.forward_model.state_dict(),
                "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore φ, the inverse head, the forward model and the optimiser."""
        self.model.load_state_dict(state["model"])
        self.forward_model.load_state_dict(state["forward_model"])
        self.optimizer.load_state_dict(state["optimizer"])


def torch_cat(*parts: torch.Tensor) -> torch.Tensor:
    """``torch.cat(parts, dim=1)`` for a module that imports torch only when it runs."""
    import torch

    return torch.cat(parts, dim=1)
