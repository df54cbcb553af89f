"""The NLE baseline network (``-t network=published``), written layer for layer from its definition.

This is the NetHack network of the NLE paper (Küttler et al., 2020) in the form the Motif and
ONI code releases define it (``rl_baseline/encoders_nle.py``, ``TorchBeastEncoder``) with its
defaults there: glyph embeddings of width 128 shared by two convolution stacks, one over the
whole 21 x 79 map (stride 2) and one over a 16 x 16 crop centred on the hero (stride 1), each
two 3 x 3 layers (128 -> 16 -> 8 channels, ELU); a two-layer MLP over the bottom-line stats;
the ``lt_cnn`` message model (a character embedding of width 32, six 1-d convolutions with
max pooling, one linear layer to 128); and a two-layer head to 512. sample-factory adds the
recurrent core (a GRU, ``rnn_size``) and the actor and critic heads, as in those releases.

Kept from the definition, quirks included: the embedded maps are transposed to
(channels, width, height) before the convolutions, and crop squares beyond the map read
glyph 0, as the bilinear-sampling crop's zero padding gave. Differences, on purpose and
named in the README: the crop is cut by indexing (the same squares, without
interpolation), the stats are NLE 1.x's 27 (the releases' NLE had 26, so the first stats
layer has 128 more weights) and pass through a signed log (the releases fed them raw to this
encoder), and keys a method adds for the policy go through ``ConditioningBranch`` and are
joined to the output.
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from nle import nethack
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.networks.encoders import ConditioningBranch

EMBEDDING = 128  # encoder_embedding_dim
HIDDEN = 512  # encoder_hidden_dim
CROP = 16  # encoder_crop_dim
LAYERS = 2  # encoder_num_layers
MIDDLE_CHANNELS, OUT_CHANNELS = 16, 8
MESSAGE_EMBEDDING, MESSAGE_HIDDEN = 32, 64  # the lt_cnn message model
#: the observation keys this network reads beyond the NetHack adapter's own
EXTRA_OBS_KEYS = ("glyphs",)


def _conv_stack(stride: int) -> nn.Sequential:
    channels = [EMBEDDING] + [MIDDLE_CHANNELS] * (LAYERS - 1) + [OUT_CHANNELS]
    layers: list[nn.Module] = []
    for c_in, c_out in zip(channels[:-1], channels[1:]):
        layers += [nn.Conv2d(c_in, c_out, kernel_size=3, stride=stride, padding=1), nn.ELU()]
    return nn.Sequential(*layers)


def _strided_size(size: int, layers: int = LAYERS) -> int:
    for _ in range(layers):
        size = (size + 2 - 3) // 2 + 1
    return size


class MessageCNN(nn.Module):
    """The ``lt_cnn`` character model: 256 bytes -> 128 features."""

    def __init__(self):
        super().__init__()
        h = MESSAGE_HIDDEN
        self.chars = nn.Embedding(256, MESSAGE_EMBEDDING, padding_idx=0)
        self.net = nn.Sequential(
            nn.Conv1d(MESSAGE_EMBEDDING, h, kernel_size=7), nn.ReLU(), nn.MaxPool1d(3, 3),
            nn.Conv1d(h, h, kernel_size=7), nn.ReLU(), nn.MaxPool1d(3, 3),
            nn.Conv1d(h, h, kernel_size=3), nn.ReLU(),
            nn.Conv1d(h, h, kernel_size=3), nn.ReLU(),
            nn.Conv1d(h, h, kernel_size=3), nn.ReLU(),
            nn.Conv1d(h, h, kernel_size=3), nn.ReLU(), nn.MaxPool1d(3, 3),
            nn.Flatten(), nn.Linear(5 * h, 2 * h), nn.ReLU(),
        )
        self.out_size = 2 * h

    def forward(self, message: torch.Tensor) -> torch.Tensor:
        """[B, 256] message bytes -> [B, 128] float features; zero bytes embed to zeros."""
        return self.net(self.chars(message.long()).transpose(1, 2))


def crop_glyphs(glyphs: torch.Tensor, x: torch.Tensor, y: torch.Tensor, size: int = CROP) -> torch.Tensor:
    """The size x size glyphs around (x, y): rows y - size/2 .. y + size/2 - 1, likewise columns;
    squares beyond the map are glyph 0."""
    batch, height, width = glyphs.shape
    offsets = torch.arange(-(size // 2), size - size // 2, device=glyphs.device)
    rows = y.long()[:, None] + offsets  # (B, size)
    cols = x.long()[:, None] + offsets
    inside = ((rows >= 0) & (rows < height))[:, :, None] & ((cols >= 0) & (cols < width))[:, None, :]
    b = torch.arange(batch, device=glyphs.device)[:, None, None]
    picked = glyphs[b, rows.clamp(0, height - 1)[:, :, None], cols.clamp(0, width - 1)[:, None, :]]
    return torch.where(inside, picked, torch.zeros_like(picked))


class NLEBaselineEncoder(Encoder):
    extra_obs_keys = EXTRA_OBS_KEYS

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        height, width = obs_space["glyphs"].shape
        self.glyph_embedding = nn.Embedding(nethack.MAX_GLYPH, EMBEDDING)
        self.map_net = _conv_stack(stride=2)
        self.crop_net = _conv_stack(stride=1)
        stats = obs_space["blstats"].shape[0]
        self.blstats_net = nn.Sequential(nn.Linear(stats, EMBEDDING), nn.ReLU(),
                                         nn.Linear(EMBEDDING, EMBEDDING), nn.ReLU())
        self.message_net = MessageCNN()
        self.map_size = _strided_size(height) * _strided_size(width) * OUT_CHANNELS
        self.crop_size = CROP * CROP * OUT_CHANNELS
        joined = EMBEDDING + self.crop_size + self.map_size + self.message_net.out_size
        self.head = nn.Sequential(nn.Linear(joined, HIDDEN // 2), nn.ReLU(), nn.Linear(HIDDEN // 2, HIDDEN))
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = HIDDEN + self.conditioning.out_size

    def _embed(self, glyphs: torch.Tensor) -> torch.Tensor:
        """(B, H, W) glyph ids -> (B, EMBEDDING, W, H), the releases' transposed layout.

        NO_GLYPH (= MAX_GLYPH, outside the table) never shows on NLE's map; it is clamped so a
        stray one cannot stop a long run."""
        return self.glyph_embedding(glyphs.long().clamp(0, nethack.MAX_GLYPH - 1)).transpose(1, 3)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The stats, the 16 x 16 glyph crop at blstats' (x, y), the whole map and
        the message through the 512-unit head, joined with any method keys."""
        glyphs = obs["glyphs"].long()
        raw_stats = obs["blstats"].float()
        stats = torch.sign(raw_stats) * torch.log1p(raw_stats.abs())
        batch = glyphs.shape[0]
        crop = crop_glyphs(glyphs, raw_stats[:, 0], raw_stats[:, 1])
        parts = [
            self.blstats_net(stats),
            self.crop_net(self._embed(crop)).reshape(batch, -1),
            self.map_net(self._embed(glyphs)).reshape(batch, -1),
            self.message_net(obs["message"]),
        ]
        out = [self.head(torch.cat(parts, dim=1))]
        return self.conditioning.joined(out, obs)

    def get_out_size(self) -> int:
        """512, plus 64 when a method adds policy keys."""
        return self.out_size


def upstream_parameter_count(blstats: int = 26, height: int = 21, width: int = 79) -> int:
    """The encoder's parameter count as the releases define it, summed layer by layer from their
    sizes (the releases' NLE had 26 stats): the figure our network must match for the same inputs."""
    def conv2d(c_in: int, c_out: int, k: int) -> int:
        return c_in * c_out * k * k + c_out

    def conv1d(c_in: int, c_out: int, k: int) -> int:
        return c_in * c_out * k + c_out

    def linear(n_in: int, n_out: int) -> int:
        return n_in * n_out + n_out

    glyphs = nethack.MAX_GLYPH * EMBEDDING
    stack = conv2d(EMBEDDING, MIDDLE_CHANNELS, 3) + conv2d(MIDDLE_CHANNELS, OUT_CHANNELS, 3)
    stats = linear(blstats, EMBEDDING) + linear(EMBEDDING, EMBEDDING)
    h = MESSAGE_HIDDEN
    message = (256 * MESSAGE_EMBEDDING + conv1d(MESSAGE_EMBEDDING, h, 7) + conv1d(h, h, 7)
               + 4 * conv1d(h, h, 3) + linear(5 * h, 2 * h))
    map_out = ((height + 1) // 2 + 1) // 2 * (((width + 1) // 2 + 1) // 2) * OUT_CHANNELS
    joined = EMBEDDING + CROP * CROP * OUT_CHANNELS + map_out + 2 * h
    head = linear(joined, HIDDEN // 2) + linear(HIDDEN // 2, HIDDEN)
    return glyphs + 2 * stack + stats + message + head
