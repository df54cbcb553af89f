"""NetHack's small policy network (``-t network=small``, also MiniHack's), sized for a CPU.

The message as a bag of hashed byte trigrams (cheap, order-aware locally), the 9x9 map crop
around the agent through a character embedding and one convolution, and the bottom-line
stats through a signed log transform; it reaches over 2,000 env steps/s in training on two
cores with a 256-unit GRU core. Keys a method adds for the policy go through the generic
``ConditioningBranch`` (``networks/encoders.py``).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.networks.encoders import ConditioningBranch

TRIGRAM_BUCKETS = 4096


def message_trigrams(message: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A message's byte trigrams hashed into ``TRIGRAM_BUCKETS`` and their weights, as an ``nn.EmbeddingBag``
    takes them: [B, 256] bytes -> ids [B, 254], weights [B, 254] (0 where the trigram ends in padding)."""
    m = message.long()
    ids = (m[:, :-2] * 65599 + m[:, 1:-1] * 257 + m[:, 2:]) % TRIGRAM_BUCKETS
    return ids, (m[:, 2:] > 0).float()


class NetHackEncoder(Encoder):
    """message [B, 256] bytes, crop [B, 9, 9] characters, blstats [B, 27] -> features [B, 320 (+64 with
    method keys)]: 128 from the message's trigrams, 128 from the crop, 64 from the stats."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        crop = obs_space["crop"].shape
        self.message_bag = nn.EmbeddingBag(TRIGRAM_BUCKETS, 128, mode="sum")
        self.message_head = nn.Sequential(nn.ELU(), nn.Linear(128, 128), nn.ELU())
        self.char_embedding = nn.Embedding(256, 16)
        self.crop_net = nn.Sequential(
            nn.Conv2d(16, 16, 3), nn.ELU(), nn.Flatten(),
            nn.Linear(16 * (crop[0] - 2) * (crop[1] - 2), 128), nn.ELU(),
        )
        self.blstats_net = nn.Sequential(nn.Linear(obs_space["blstats"].shape[0], 64), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 128 + 128 + 64 + self.conditioning.out_size

    def _message(self, message: torch.Tensor) -> torch.Tensor:
        ids, weights = message_trigrams(message)
        return self.message_head(self.message_bag(ids, per_sample_weights=weights))

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The message's trigrams, the embedded crop through the convolution
        and the signed-log stats, joined with any method keys."""
        crop = self.char_embedding(obs["crop"].long()).permute(0, 3, 1, 2)
        blstats = obs["blstats"].float()
        blstats = torch.sign(blstats) * torch.log1p(blstats.abs())
        parts = [self._message(obs["message"]), self.crop_net(crop), self.blstats_net(blstats)]
        return self.conditioning.joined(parts, obs)

    def get_out_size(self) -> int:
        """320, plus 64 when a method adds policy keys."""
        return self.out_size


class NetHackLightEncoder(Encoder):
    """The same three inputs as ``NetHackEncoder`` through one narrow layer (``-t network=light``, and with a
    64-unit core the ``light`` preset): message [B, 256] bytes, crop [B, 9, 9] characters, blstats [B, 27] ->
    features [B, 64 (+64 with method keys)].

    Why: on two cores the small network's passes (its convolution, its 320 features into a 256-unit GRU) cost
    more CPU per env step than NetHack itself, so training reaches about an eighth of what the cores could
    step; this one costs about a tenth as many multiply-adds. It is a smaller policy, not the same function:
    it learns differently (docs/GPU.md has its figures) and is never a default."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        crop = obs_space["crop"].shape
        self.message_bag = nn.EmbeddingBag(TRIGRAM_BUCKETS, 32, mode="sum")
        self.char_embedding = nn.Embedding(256, 4)
        joined = 32 + 4 * crop[0] * crop[1] + obs_space["blstats"].shape[0]
        self.net = nn.Sequential(nn.Linear(joined, 64), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 64 + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The message's trigram bag, the embedded crop flattened and the signed-log stats, through one layer,
        joined with any method keys."""
        ids, weights = message_trigrams(obs["message"])
        message = self.message_bag(ids, per_sample_weights=weights)
        crop = self.char_embedding(obs["crop"].long()).flatten(1)
        blstats = obs["blstats"].float()
        blstats = torch.sign(blstats) * torch.log1p(blstats.abs())
        return self.conditioning.joined([self.net(torch.cat([message, crop, blstats], dim=1))], obs)

    def get_out_size(self) -> int:
        """64, plus 64 when a method adds policy keys."""
        return self.out_size
