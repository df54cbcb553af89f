"""Motif's reward model: a character CNN over the 256 message bytes, and its loss.

Architecture as published (the ``lt_cnn`` message encoder of Motif's TorchBeast-style
encoder, followed by the encoder's MLP and the reward head):

    embedding 256 -> 32 (byte 0 is padding: a zero vector)
    conv1d 32->64 k7, ReLU, maxpool 3
    conv1d 64->64 k7, ReLU, maxpool 3
    4 x (conv1d 64->64 k3, ReLU), maxpool 3        -> 64 channels x 5 positions
    flatten 320 -> linear 128, ReLU                 (message features)
    linear 128 -> 256, ReLU, linear 256 -> 512      (encoder MLP)
    ReLU, linear 512 -> 1                           (reward head)

Linear layers start orthogonal with zero bias, as sample-factory initialised them.
The loss is Bradley-Terry with ties: cross-entropy between softmax(r1, r2) and the soft
target [1, 0] (first preferred), [0, 1] (second) or [0.5, 0.5] (tie).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from llmexplore.methods.motif.dataset import LABEL_FIRST, LABEL_SECOND, LABEL_TIE

MESSAGE_BYTES = 256
ARCHITECTURE = "motif-char-cnn-v1"


class MessageEncoder(nn.Module):
    """(B, 256) uint8 bytes -> (B, 128) features."""

    def __init__(self, embedding_dim: int = 32, channels: int = 64, out_dim: int = 128):
        super().__init__()
        self.embedding = nn.Embedding(256, embedding_dim, padding_idx=0)
        self.convs = nn.Sequential(
            nn.Conv1d(embedding_dim, channels, kernel_size=7), nn.ReLU(), nn.MaxPool1d(3, 3),
            nn.Conv1d(channels, channels, kernel_size=7), nn.ReLU(), nn.MaxPool1d(3, 3),
            nn.Conv1d(channels, channels, kernel_size=3), nn.ReLU(),
            nn.Conv1d(channels, channels, kernel_size=3), nn.ReLU(),
            nn.Conv1d(channels, channels, kernel_size=3), nn.ReLU(),
            nn.Conv1d(channels, channels, kernel_size=3), nn.ReLU(),
            nn.MaxPool1d(3, 3),
            nn.Flatten(),
        )
        self.fc = nn.Sequential(nn.Linear(channels * 5, out_dim), nn.ReLU())

    def forward(self, message: torch.Tensor) -> torch.Tensor:
        """(B, 256) message bytes of any integer dtype -> (B, 128) float32 features."""
        x = self.embedding(message.long()).transpose(1, 2)  # (B, E, 256)
        return self.fc(self.convs(x))


class MotifRewardModel(nn.Module):
    """r(m): one scalar per message."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = MessageEncoder()
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 512))
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(512, 1))
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.orthogonal_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, message: torch.Tensor) -> torch.Tensor:
        """(B, 256) -> (B,)"""
        return self.head(self.mlp(self.encoder(message))).squeeze(-1)

    @staticmethod
    def describe() -> dict[str, Any]:
        """The architecture's name, input and output, as plain data."""
        return {"name": ARCHITECTURE, "input": "message bytes (256,)", "output": "scalar reward"}


def soft_targets(labels: torch.Tensor) -> torch.Tensor:
    """Labels 0/1/2 -> (B, 2) targets [1,0], [0,1], [0.5,0.5]. Unknown (3) must be dropped before."""
    if labels.numel() and int(labels.max()) > LABEL_TIE:
        raise ValueError("unknown (3) labels must be dropped before computing targets")
    second = torch.where(labels == LABEL_TIE, 0.5, (labels == LABEL_SECOND).float())
    return torch.stack([1.0 - second, second], dim=-1)


def preference_loss(rewards: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of softmax over each pair's two rewards (B, 2) against the soft targets."""
    log_p = torch.log_softmax(rewards, dim=-1)
    return -(soft_targets(labels).to(log_p) * log_p).sum(-1).mean()


def non_tie_accuracy(rewards: torch.Tensor, labels: torch.Tensor) -> tuple[int, int]:
    """(correct, total) over pairs with a strict preference; equal rewards count as wrong."""
    strict = (labels == LABEL_FIRST) | (labels == LABEL_SECOND)
    predicted_second = rewards[:, 1] > rewards[:, 0]
    predicted_first = rewards[:, 0] > rewards[:, 1]
    correct = torch.where(labels == LABEL_SECOND, predicted_second, predicted_first) & strict
    return int(correct.sum()), int(strict.sum())
