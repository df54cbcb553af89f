"""A third-party method whose learner-side reward always fails: for failure-handling tests."""

import torch

from llmexplore.methods import IntrinsicReward


class Exploding(IntrinsicReward):
    name = "test-exploding"
    description = "raises on its first learner batch"

    def reward(self, batch):
        raise RuntimeError("this method always fails (test plugin)")


class Steady(IntrinsicReward):
    name = "test-steady"
    description = "a constant reward, registered through an entry point"

    def reward(self, batch):
        return torch.full(batch.shape, 0.01)
