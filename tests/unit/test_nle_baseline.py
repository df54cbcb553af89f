"""The published NetHack network (``-t network=published``): layers, shapes, parameter count, crop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sample_factory.utils.attr_dict import AttrDict

from llmexplore.agents.train_config import TrainConfig, network_encoder
from llmexplore.envs.nethack.nle_baseline import NLEBaselineEncoder, crop_glyphs, upstream_parameter_count
from llmexplore.envs import make_adapter
from llmexplore.errors import ConfigError


@pytest.fixture(scope="module")
def space():
    env = make_adapter("nethack:score").make_env(extra_keys=("glyphs",))
    try:
        return env.observation_space
    finally:
        env.close()


def test_parameter_count_matches_the_released_definition(space):
    encoder = NLEBaselineEncoder(AttrDict({}), space)
    ours = sum(p.numel() for p in encoder.parameters())
    # the releases' NLE had 26 bottom-line stats, ours 27: 128 more weights in the first stats layer
    assert upstream_parameter_count(blstats=26) == 1_933_360
    assert ours == upstream_parameter_count(blstats=27) == 1_933_488
    assert ours - upstream_parameter_count(blstats=26) == 128


def test_layer_shapes_follow_the_definition(space):
    encoder = NLEBaselineEncoder(AttrDict({}), space)
    shapes = {name: tuple(p.shape) for name, p in encoder.named_parameters()}
    assert shapes["glyph_embedding.weight"] == (5976, 128)
    assert shapes["map_net.0.weight"] == shapes["crop_net.0.weight"] == (16, 128, 3, 3)
    assert shapes["map_net.2.weight"] == shapes["crop_net.2.weight"] == (8, 16, 3, 3)
    assert encoder.map_net[0].stride == (2, 2) and encoder.crop_net[0].stride == (1, 1)
    assert shapes["blstats_net.0.weight"] == (128, 27) and shapes["blstats_net.2.weight"] == (128, 128)
    assert shapes["message_net.chars.weight"] == (256, 32)
    assert shapes["message_net.net.0.weight"] == (64, 32, 7)
    assert shapes["message_net.net.3.weight"] == (64, 64, 7)
    assert shapes["message_net.net.16.weight"] == (128, 320)
    assert encoder.map_size == 6 * 20 * 8 and encoder.crop_size == 16 * 16 * 8  # 960 and 2,048
    assert shapes["head.0.weight"] == (256, 128 + 2048 + 960 + 128) and shapes["head.2.weight"] == (512, 256)
    obs = {k: torch.as_tensor(np.stack([v.sample() for _ in range(2)])) for k, v in space.spaces.items()}
    obs["glyphs"] = obs["glyphs"].clamp(0, 5975)
    obs["blstats"][:, :2] = torch.tensor([[3.0, 4.0], [78.0, 0.0]])
    assert encoder(obs).shape == (2, 512)


def test_crop_is_centred_on_the_hero_and_reads_glyph_zero_beyond_the_map():
    glyphs = torch.arange(21 * 79).reshape(1, 21, 79) + 1
    crop = crop_glyphs(glyphs, torch.tensor([10.0]), torch.tensor([12.0]))[0]
    assert crop.shape == (16, 16)
    assert crop[8, 8] == glyphs[0, 12, 10]  # the hero's square sits at (size/2, size/2)
    assert crop[0, 0] == glyphs[0, 4, 2] and crop[-1, -1] == glyphs[0, 19, 17]
    corner = crop_glyphs(glyphs, torch.tensor([0.0]), torch.tensor([0.0]))[0]
    assert (corner[:8] == 0).all() and (corner[:, :8] == 0).all() and corner[8, 8] == glyphs[0, 0, 0]


def test_small_stays_the_default_and_published_is_the_familys_own():
    assert TrainConfig().network == "small"
    assert network_encoder("nethack", "small") == "nethack"
    assert network_encoder("nethack", "published") == "nethack-published"
    assert network_encoder("crafter", "published") == "crafter-published"
    with pytest.raises(ConfigError, match="not available for housekeep"):
        network_encoder("housekeep", "published")


def test_published_preset_fills_what_the_run_leaves_unset():
    train = TrainConfig(preset="published", num_workers=2).resolved("nethack")
    assert (train.network, train.envs_per_worker, train.batch_size, train.rnn_size, train.device) == (
        "published", 20, 4096, 512, "gpu")
    assert train.num_workers == 2 and train.reward_scale == 0.1  # set by the run: kept
    assert TrainConfig(preset="published").resolved("nethack").num_workers == 24
