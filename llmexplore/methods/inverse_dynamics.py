"""State embeddings trained by inverse dynamics: the feature space E3B, ICM and APT-on-ICM reward in.

φ(s) reads the observation through the task family's own small policy network (``EnvFamily.networks``,
fresh weights, never the policy's) and a linear layer to ``embed_dim`` (E3B may end it with a ReLU or a
LayerNorm, ``EMBEDDING_OUTPUTS``; ICM and APT keep the linear layer); an inverse head predicts the
action a_t from [φ(s_t), φ(s_{t+1})]. Learning to name the action that links two states makes φ keep
what the agent controls and drop what it cannot (noise, clocks, weather), which is why E3B and ICM
embed states this way. Their published embedding networks mirror their policy networks, which is what
reusing the family's encoder gives here: a character-embedding CNN over the map crop with the message
and bottom-line stats on NetHack, the DQN stem over the image with the inventory on Crafter.

Shapes: observations [M, ...] per key (one row per state), φ [M, D], inverse logits [M, A].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import torch
from torch import nn

from llmexplore.envs.base import ENV_UID_KEY

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym

    from llmexplore.envs.base import TaskSpec
    from llmexplore.methods.base import MethodContext


def action_count(context: MethodContext) -> int:
    """How many discrete actions the task has: the learner tells (``context.num_actions``); elsewhere
    (tests, evaluation) one env is built to read its action space."""
    if context.num_actions is not None:
        return int(context.num_actions)
    from llmexplore.envs import make_adapter

    env = make_adapter(context.task).make_env()
    try:
        return int(env.action_space.n)
    finally:
        env.close()


def family_encoder(task: TaskSpec, obs_space: gym.spaces.Dict, network: str) -> nn.Module:
    """A fresh copy of the family's policy encoder ``network`` (its trunk only: no method keys),
    or a two-layer MLP over every key where the family offers none. Raises KeyError or ConfigError
    when the observation lacks what the encoder reads."""
    from llmexplore.networks.encoders import GenericEncoder, encoder_class
    from llmexplore.envs.registry import find_family
    from llmexplore.errors import ConfigError, shown

    family = find_family(task.family)
    spaces = {k: v for k, v in obs_space.spaces.items() if k != ENV_UID_KEY}
    import gymnasium as gym

    space = gym.spaces.Dict(spaces)
    if family is None:
        return GenericEncoder(None, space)
    if network not in family.networks:
        raise ConfigError(f"family '{task.family}' offers no network {shown(network)} for the state embedding",
                          hint=f"choose one of {sorted(family.networks)}")
    return encoder_class(family.networks[network].name)(None, space, ())


#: what may end φ after its linear layer: nothing, a ReLU (E3B's IMPALA code), a LayerNorm (its APPO code)
EMBEDDING_OUTPUTS = ("linear", "relu", "layernorm")


def output_layer(output: str, embed_dim: int) -> nn.Module:
    """The layer after φ's linear map for ``output`` (one of ``EMBEDDING_OUTPUTS``). ``linear`` gives a
    parameter-free identity, so φ's state keys stay those of the plain linear embedding."""
    if output == "linear":
        return nn.Identity()
    if output == "relu":
        return nn.ReLU()
    if output == "layernorm":
        return nn.LayerNorm(embed_dim)
    raise ValueError(f"embedding output must be one of {EMBEDDING_OUTPUTS}, not {output!r}")


class StateEmbedding(nn.Module):
    """φ: the family encoder, a linear map to ``embed_dim``, ``output``'s layer. obs [M, ...] -> [M, D]."""

    def __init__(self, task: TaskSpec, obs_space: gym.spaces.Dict, network: str, embed_dim: int,
                 output: str = "linear"):
        super().__init__()
        self.trunk = family_encoder(task, obs_space, network)
        self.out = nn.Linear(self.trunk.get_out_size(), embed_dim)
        self.final = output_layer(output, embed_dim)

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """φ of M observations: tensors by key, [M, ...] -> [M, D] float32."""
        return self.final(self.out(self.trunk(dict(obs))))


class InverseDynamics(nn.Module):
    """φ with an inverse head: logits of a_t from [φ(s_t), φ(s_{t+1})], [M, A]."""

    def __init__(self, task: TaskSpec, obs_space: gym.spaces.Dict, network: str, embed_dim: int,
                 num_actions: int, hidden: int = 256, embedding_output: str = "linear"):
        super().__init__()
        self.embed = StateEmbedding(task, obs_space, network, embed_dim, embedding_output)
        self.inverse = nn.Sequential(nn.Linear(2 * embed_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_actions))

    def inverse_logits(self, phi_now: torch.Tensor, phi_next: torch.Tensor) -> torch.Tensor:
        """Unnormalised action logits [M, A] from φ(s_t) and φ(s_{t+1}), [M, D] each."""
        return self.inverse(torch.cat([phi_now, phi_next], dim=1))


def flat_steps(obs: Mapping[str, torch.Tensor], keys: tuple[str, ...] | None = None) -> dict[str, torch.Tensor]:
    """[N, T, ...] tensors -> [N*T, ...] (dtype kept: encoders cast what they read)."""
    chosen = keys if keys is not None else tuple(k for k in obs if k != ENV_UID_KEY)
    return {k: obs[k].reshape(-1, *obs[k].shape[2:]) for k in chosen}


def within_episode(dones: torch.Tensor) -> torch.Tensor:
    """[N, T] -> [N*T] bool: transitions whose next observation belongs to the same episode (a
    transition that ended an episode is followed by the next episode's first observation)."""
    return dones.reshape(-1) == 0


def inverse_loss(model: InverseDynamics, phi_now: torch.Tensor, phi_next: torch.Tensor,
                 actions: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Cross-entropy of the true action over transitions ``keep`` ([M] bool), and the accuracy."""
    import torch.nn.functional as F

    logits = model.inverse_logits(phi_now[keep], phi_next[keep])
    target = actions.reshape(-1).long()[keep]
    if target.numel() == 0:
        return logits.sum() * 0.0, float("nan")
    loss = F.cross_entropy(logits, target)
    accuracy = float((logits.argmax(dim=1) == target).float().mean())
    return loss, accuracy


def clip_gradients(groups: Sequence[Iterable[nn.Parameter]], max_norm: float | None) -> None:
    """Scale the gradients of each parameter group so that the group's joint L2 norm is at most
    ``max_norm`` (``torch.nn.utils.clip_grad_norm_``, group by group); None leaves them as they are."""
    if max_norm is None:
        return
    for params in groups:
        torch.nn.utils.clip_grad_norm_(list(params), max_norm)
