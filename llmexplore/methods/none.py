"""The ``none`` baseline: extrinsic reward only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmexplore.methods.base import IntrinsicReward, RewardBatch
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import torch


@register_method
class NoIntrinsicReward(IntrinsicReward):
    name = "none"
    display_name = "No bonus"
    description = "extrinsic reward only"

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """Zeros, [N, T] float32 on the actions' device."""
        import torch

        return torch.zeros(batch.shape, device=batch.actions.device)
