"""The ``none`` baseline: extrinsic reward only."""

from __future__ import annotations

import torch

from llmexplore.methods.base import IntrinsicReward, RewardBatch
from llmexplore.methods.registry import register_method


@register_method
class NoIntrinsicReward(IntrinsicReward):
    name = "none"
    description = "extrinsic reward only"

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        return torch.zeros(batch.shape, device=batch.actions.device)
