"""NetHack's light network and preset: the small network's inputs, a tenth of its arithmetic; opt-in."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from sample_factory.utils.attr_dict import AttrDict

from llmexplore.agents.train_config import TrainConfig, network_encoder
from llmexplore.envs.nethack.network import NetHackEncoder, NetHackLightEncoder


def _space() -> gym.spaces.Dict:
    return gym.spaces.Dict({
        "message": gym.spaces.Box(0, 255, (256,), np.uint8),
        "blstats": gym.spaces.Box(-(2**31), 2**31 - 1, (27,), np.float32),
        "crop": gym.spaces.Box(0, 255, (9, 9), np.uint8),
    })


def _batch(size: int) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(0)
    message = np.zeros((size, 256), np.uint8)
    message[:, :20] = rng.integers(32, 127, (size, 20))
    return {"message": torch.as_tensor(message),
            "blstats": torch.as_tensor(rng.integers(0, 100, (size, 27)).astype(np.float32)),
            "crop": torch.as_tensor(rng.integers(32, 127, (size, 9, 9)).astype(np.uint8))}


def test_the_light_encoder_reads_the_small_networks_inputs_into_64_features():
    encoder = NetHackLightEncoder(AttrDict({}), _space())
    out = encoder(_batch(5))
    assert out.shape == (5, 64) == (5, encoder.get_out_size()) and torch.isfinite(out).all()
    out.sum().backward()  # every input path carries gradient to its weights
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in encoder.parameters())


def test_a_methods_policy_keys_join_the_light_features_as_they_join_the_small_ones():
    space = gym.spaces.Dict({**_space().spaces, "skill": gym.spaces.Box(0.0, 1.0, (5,), np.float32)})
    encoder = NetHackLightEncoder(AttrDict({}), space, policy_keys=("skill",))
    batch = {**_batch(3), "skill": torch.eye(5)[:3]}
    assert encoder(batch).shape == (3, 128) == (3, encoder.get_out_size())


def test_the_light_encoder_does_about_a_tenth_of_the_small_ones_arithmetic():
    """Counted by torch's FLOP counter (its matrix products and convolutions; the trigram table and the
    character embedding are looked up, not multiplied)."""
    from torch.utils.flop_counter import FlopCounterMode

    def flops(encoder) -> int:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            encoder(_batch(8))
        return counter.get_total_flops()

    light = flops(NetHackLightEncoder(AttrDict({}), _space()))
    small = flops(NetHackEncoder(AttrDict({}), _space()))
    assert 0 < light * 8 < small


def test_the_light_preset_names_the_light_network_and_a_small_core_and_is_never_the_default():
    train = TrainConfig(preset="light").resolved("nethack")
    assert (train.network, train.rnn_size) == ("light", 64)
    assert network_encoder("nethack", "light") == "nethack-light"
    default = TrainConfig().resolved("nethack")
    assert (default.network, default.rnn_size) == ("small", 256)
