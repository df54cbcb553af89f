"""The generic side of the policy encoders: each environment family declares its own networks
(``EnvFamily.networks``, by ``module:Class``, in ``envs/<family>/network.py``) and run settings
carry the network's name; this module finds the class of a name and offers the parts families share.

It sits below both the engine (``agents/encoders.py`` hands the class to sample-factory) and the
methods (``methods/inverse_dynamics.py`` embeds states with a fresh copy of a family's network),
so neither reaches into the other for a network.

* ``ConditioningBranch``: keys a method adds for the policy to condition on (a goal embedding,
  a skill one-hot), flattened into one more small MLP branch joined after a family's features.
* ``dqn_stem``: the DQN paper's convolutions, for image observations.
* ``GenericEncoder``: an MLP over every key, for adapters without a network of their own.

All are sized for throughput on a CPU (the suite's default machine).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.envs.base import ENV_UID_KEY


def _flat_size(space: gym.spaces.Space) -> int:
    return int(torch.tensor(space.shape).prod()) if space.shape else 1


class ConditioningBranch(nn.Module):
    """Flattens the extra keys a method wants the policy to see."""

    def __init__(self, obs_space: gym.spaces.Dict, keys: Sequence[str], out: int = 64):
        super().__init__()
        self.keys = [k for k in keys if k in obs_space.spaces]
        size = sum(_flat_size(obs_space.spaces[k]) for k in self.keys)
        self.net = nn.Sequential(nn.Linear(size, out), nn.ELU()) if size else None
        self.out_size = out if size else 0

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """The branch's features, (B, out) float32; None when the observation lacks all the method's keys."""
        if self.net is None:
            return None
        x = torch.cat([obs[k].reshape(obs[k].shape[0], -1).float() for k in self.keys], dim=1)
        return self.net(x)

    def joined(self, parts: list[torch.Tensor], obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """An encoder's features with this branch's output after them, when the method adds keys."""
        extra = self(obs)
        return torch.cat(parts if extra is None else [*parts, extra], dim=1)


def dqn_stem(channels: int, activation: type[nn.Module]) -> nn.Sequential:
    """The DQN paper's convolutions (8x8/4, 4x4/2, 3x3/1; 32, 64, 64 channels), flattened."""
    return nn.Sequential(
        nn.Conv2d(channels, 32, 8, stride=4), activation(),
        nn.Conv2d(32, 64, 4, stride=2), activation(),
        nn.Conv2d(64, 64, 3, stride=1), activation(),
        nn.Flatten(),
    )


class GenericEncoder(Encoder):
    """For adapters without a dedicated network: an MLP over every flattened key."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        self.keys = [k for k in obs_space.spaces if k != ENV_UID_KEY]
        size = sum(_flat_size(obs_space.spaces[k]) for k in self.keys)
        self.net = nn.Sequential(nn.Linear(size, 256), nn.ELU(), nn.Linear(256, 256), nn.ELU())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Every key but the env id, flattened and joined, through the MLP: (B, 256) float32."""
        return self.net(torch.cat([obs[k].reshape(obs[k].shape[0], -1).float() for k in self.keys], dim=1))

    def get_out_size(self) -> int:
        """Width of ``forward``'s features: the MLP's fixed 256."""
        return 256


#: the encoder of run settings that name no family's network
GENERIC = "generic"


def encoder_class(name: str) -> type[Encoder]:
    """The encoder class of a network name (``EnvFamily.networks``), imported when first asked for."""
    from llmexplore.envs.family import import_path
    from llmexplore.envs.registry import find_network

    if name == GENERIC:
        return GenericEncoder
    network = find_network(name)
    if network is None:
        from llmexplore.errors import ConfigError, shown

        raise ConfigError(f"no environment family offers the network {shown(name)}",
                          hint="register the family that names it (llmexplore.envs.register_family)")
    return import_path(network.encoder)


def encoder_obs_keys(name: str) -> tuple[str, ...]:
    """Observation keys an encoder reads beyond its adapter's defaults (asked from the adapter)."""
    return tuple(getattr(encoder_class(name), "extra_obs_keys", ()))

