"""Housekeep's policy network: the symbolic view through a two-layer MLP.

Category embeddings of the house's rooms, the room's receptacles and the visible objects,
one-hot slots (where the agent is, what each object lies on, what it carries). Slots line up
with the slot actions, so a flat MLP can tie "object j lies on receptacle k" to "go to
receptacle k" and "pick object j". Keys a method adds for the policy go through the generic
``ConditioningBranch`` (``networks/encoders.py``).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.networks.encoders import ConditioningBranch


class HousekeepEncoder(Encoder):
    """Housekeep's symbolic view (room, receptacle and object ids, one-hot slots), each [B, slots] ->
    features [B, 256 (+64 with method keys)]."""

    EMBED = 16

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)

        def table(key: str) -> nn.Embedding:
            return nn.Embedding(int(obs_space[key].high.max()) + 1, self.EMBED, padding_idx=0)

        self.room_types = table("rooms")
        self.receptacle_types = table("receptacles")
        self.object_types = table("objects")
        self.slots = {k: int(obs_space[k].high.max()) + 1 for k in ("room", "at", "object_on", "held")}
        size = self.EMBED * sum(obs_space[k].shape[0] for k in ("rooms", "receptacles", "objects"))
        size += sum(self.slots[k] * obs_space[k].shape[0] for k in self.slots)
        self.net = nn.Sequential(nn.Linear(size, 256), nn.ELU(), nn.Linear(256, 256), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 256 + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Category ids embedded and slot keys one-hot (clamped to
        their range) through the MLP, joined with any method keys."""
        n = obs["rooms"].shape[0]
        parts = [
            self.room_types(obs["rooms"].long()).reshape(n, -1),
            self.receptacle_types(obs["receptacles"].long()).reshape(n, -1),
            self.object_types(obs["objects"].long()).reshape(n, -1),
        ]
        for key, size in self.slots.items():
            parts.append(nn.functional.one_hot(obs[key].long().clamp(0, size - 1), size).reshape(n, -1).float())
        out = [self.net(torch.cat(parts, dim=1))]
        return self.conditioning.joined(out, obs)

    def get_out_size(self) -> int:
        """256, plus 64 when a method adds policy keys."""
        return self.out_size
