"""Pieces several methods share: running statistics and observation feature networks."""

from __future__ import annotations

from typing import Mapping, Sequence

import gymnasium as gym
import torch
from torch import nn


class RunningMeanStd(nn.Module):
    """Mean and variance of a stream, merged batch by batch (Chan et al.'s parallel update)."""

    def __init__(self, shape: Sequence[int] = (), epsilon: float = 1e-4):
        super().__init__()
        self.register_buffer("mean", torch.zeros(tuple(shape), dtype=torch.float64))
        self.register_buffer("var", torch.ones(tuple(shape), dtype=torch.float64))
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch [B, *shape] into the running mean and variance."""
        x = x.detach().to(torch.float64).reshape(-1, *self.mean.shape)
        if x.shape[0] == 0:
            return
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False)
        n = x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        """The running standard deviation, at least 1e-8."""
        return self.var.sqrt().clamp_min(1e-8)

    def normalize(self, x: torch.Tensor, clip: float | None = None) -> torch.Tensor:
        """``(x - mean) / std``, clipped to +-clip when given."""
        y = (x - self.mean.to(x.dtype)) / self.std.to(x.dtype)
        return y.clamp(-clip, clip) if clip is not None else y


def is_image(space: gym.spaces.Space) -> bool:
    """Whether a space holds H x W x C images (C 1 or 3)."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.shape[-1] in (1, 3)


class ObservationFeatures(nn.Module):
    """A feature network over chosen observation keys: a small CNN for HWC images,
    an MLP over the flattened values of everything else. Used with random weights
    (RND's target) and trained (RND's predictor, APT's representation)."""

    def __init__(self, spaces: Mapping[str, gym.spaces.Box], out_dim: int = 128, hidden: int = 256):
        super().__init__()
        self.keys = list(spaces)
        self.image_keys = [k for k in self.keys if is_image(spaces[k])]
        self.flat_keys = [k for k in self.keys if k not in self.image_keys]
        self.convs = nn.ModuleDict()
        size = 0
        for key in self.image_keys:
            h, w, c = spaces[key].shape
            conv = nn.Sequential(
                nn.Conv2d(c, 16, 8, stride=4), nn.LeakyReLU(),
                nn.Conv2d(16, 32, 4, stride=2), nn.LeakyReLU(),
                nn.Flatten(),
            )
            with torch.no_grad():
                size += conv(torch.zeros(1, c, h, w)).shape[1]
            self.convs[key] = conv
        flat = sum(int(torch.tensor(spaces[k].shape).prod()) for k in self.flat_keys)
        size += flat
        self.head = nn.Sequential(nn.Linear(size, hidden), nn.LeakyReLU(), nn.Linear(hidden, out_dim))

    def forward(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Features [B, out_dim] of a batch of observations (images through a CNN, the rest flattened)."""
        parts = []
        for key in self.image_keys:
            x = inputs[key]
            parts.append(self.convs[key](x.permute(0, 3, 1, 2)))
        for key in self.flat_keys:
            parts.append(inputs[key].reshape(inputs[key].shape[0], -1))
        return self.head(torch.cat(parts, dim=1))


def flat_batch(obs: Mapping[str, torch.Tensor], keys: Sequence[str]) -> dict[str, torch.Tensor]:
    """[N, T, ...] tensors -> [N*T, ...] float tensors for the given keys."""
    out = {}
    for key in keys:
        x = obs[key]
        out[key] = x.reshape(-1, *x.shape[2:]).float()
    return out
