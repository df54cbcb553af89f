"""Motif's reward model: the published architecture, the loss with ties, quantile interpolation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from llmexplore.methods.motif.artifacts import QUANTILE_GRID, interpolate_quantile, quantile_table
from llmexplore.methods.motif.model import MotifRewardModel, non_tie_accuracy, preference_loss, soft_targets


def test_architecture_shapes():
    model = MotifRewardModel()
    emb = model.encoder.embedding
    assert emb.weight.shape == (256, 32) and emb.padding_idx == 0 and torch.all(emb.weight[0] == 0)
    convs = [m for m in model.encoder.convs if isinstance(m, nn.Conv1d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size[0]) for c in convs] == [
        (32, 64, 7), (64, 64, 7), (64, 64, 3), (64, 64, 3), (64, 64, 3), (64, 64, 3)]
    assert sum(isinstance(m, nn.MaxPool1d) for m in model.encoder.convs) == 3
    x = torch.randint(0, 256, (5, 256), dtype=torch.uint8)
    conv_out = model.encoder.convs[:-1](model.encoder.embedding(x.long()).transpose(1, 2))
    assert conv_out.shape == (5, 64, 5)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(l.in_features, l.out_features) for l in linears] == [(320, 128), (128, 256), (256, 512), (512, 1)]
    assert isinstance(model.head[0], nn.ReLU)
    assert model(x).shape == (5,)


def test_padding_bytes_embed_to_zero_and_messages_differ():
    model = MotifRewardModel()
    a = torch.zeros(1, 256, dtype=torch.uint8)
    b = a.clone()
    b[0, :5] = torch.tensor(list(b"hello"))
    assert model(a).item() != model(b).item()


def test_loss_with_ties():
    equal = torch.zeros(3, 2)
    labels = torch.tensor([0, 1, 2])
    assert preference_loss(equal, labels).item() == pytest.approx(math.log(2))
    rewards = torch.tensor([[10.0, 0.0]])
    assert preference_loss(rewards, torch.tensor([0])).item() == pytest.approx(math.log1p(math.exp(-10)), abs=1e-6)
    assert preference_loss(rewards, torch.tensor([1])).item() == pytest.approx(10 + math.log1p(math.exp(-10)), rel=1e-4)
    # a tie is best served by equal rewards: the gradient vanishes there and the loss grows either way
    r = torch.zeros(1, 2, requires_grad=True)
    preference_loss(r, torch.tensor([2])).backward()
    assert torch.allclose(r.grad, torch.zeros(1, 2))
    assert preference_loss(torch.tensor([[1.0, 0.0]]), torch.tensor([2])) > math.log(2)
    assert torch.equal(soft_targets(torch.tensor([0, 1, 2])), torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="unknown"):
        soft_targets(torch.tensor([3]))


def test_accuracy_counts_only_strict_preferences():
    rewards = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    assert non_tie_accuracy(rewards, torch.tensor([0, 1, 2, 0])) == (1, 3)


def test_quantile_interpolation():
    z = np.arange(101, dtype=float)  # quantile q of 0..100 is 100 q
    table = quantile_table(z)
    assert [q for q, _ in table] == list(QUANTILE_GRID)
    assert interpolate_quantile(table, 0.5) == pytest.approx(50)
    assert interpolate_quantile(table, 0.125) == pytest.approx(12.5)  # between the 0.1 and 0.15 grid points
    assert interpolate_quantile(table, 0.01) == pytest.approx(1.0)  # below 0.05: towards the minimum
    skewed = quantile_table(np.array([0.0, 0.0, 0.0, 10.0]))
    assert interpolate_quantile(skewed, 0.97) == pytest.approx(
        np.interp(0.97, [0.95, 1.0], [np.quantile([0, 0, 0, 10], 0.95), 10.0]))
    with pytest.raises(ValueError):
        interpolate_quantile(table, 1.5)
