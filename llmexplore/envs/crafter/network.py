"""Crafter's policy networks: ``small`` (the default) and ``published`` (the scoreboard PPO's).

* ``CrafterEncoder``: the 64x64 image through a three-layer DQN-style CNN, and the inventory.
* ``CrafterPublishedEncoder``: stable-baselines3's ``CnnPolicy`` feature extractor on the image alone.

Keys a method adds for the policy go through the generic ``ConditioningBranch`` (``networks/encoders.py``).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.networks.encoders import ConditioningBranch, dqn_stem


class CrafterEncoder(Encoder):
    """image [B, 64, 64, 3] bytes, inventory [B, 16] counts -> features [B, 320 (+64 with method keys)]:
    256 from the DQN stem over the image, 64 from the inventory."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        h, w, c = obs_space["image"].shape
        # the DQN-style stride-4 stem: 5-6x cheaper on a CPU than stride-2 stems of similar depth
        self.cnn = dqn_stem(c, nn.ELU)
        with torch.no_grad():
            cnn_out = self.cnn(torch.zeros(1, c, h, w)).shape[1]
        self.image_head = nn.Sequential(nn.Linear(cnn_out, 256), nn.ELU())
        self.inventory_net = nn.Sequential(nn.Linear(obs_space["inventory"].shape[0], 64), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 256 + 64 + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The image scaled to [0, 1] through the DQN stem and the inventory
        divided by 9 (Crafter's cap), joined with any method keys."""
        image = obs["image"].float().permute(0, 3, 1, 2) / 255.0
        parts = [self.image_head(self.cnn(image)), self.inventory_net(obs["inventory"].float() / 9.0)]
        return self.conditioning.joined(parts, obs)

    def get_out_size(self) -> int:
        """320, plus 64 when a method adds policy keys."""
        return self.out_size


class CrafterPublishedEncoder(Encoder):
    """The network of Crafter's scoreboard PPO: stable-baselines3's ``CnnPolicy`` feature extractor
    (the DQN paper's CNN) on the image alone, scaled to [0, 1]; sample-factory adds the linear policy
    and value heads. Run without a recurrent core (``use_rnn=False``), it has SB3's parameter count.
    The inventory counts are not read (the published agent saw them only as drawn in the image)."""

    FEATURES = 512

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        h, w, c = obs_space["image"].shape
        self.cnn = dqn_stem(c, nn.ReLU)
        with torch.no_grad():
            cnn_out = self.cnn(torch.zeros(1, c, h, w)).shape[1]  # 1,024 for 64x64 images
        self.linear = nn.Sequential(nn.Linear(cnn_out, self.FEATURES), nn.ReLU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = self.FEATURES + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The image scaled to [0, 1] through SB3's CNN and its 512-unit layer, joined with any method keys."""
        image = obs["image"].float().permute(0, 3, 1, 2) / 255.0
        return self.conditioning.joined([self.linear(self.cnn(image))], obs)

    def get_out_size(self) -> int:
        """512, plus 64 when a method adds policy keys."""
        return self.out_size
