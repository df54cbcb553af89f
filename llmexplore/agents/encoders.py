"""sample-factory's encoder factory: the network a resolved run names (``networks/encoders.py`` finds it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    from sample_factory.model.encoder import Encoder


def make_encoder(cfg, obs_space: gym.spaces.Dict) -> Encoder:
    """sample-factory's encoder factory: picks the network the resolved run names."""
    from llmexplore.agents.run_settings import RunSettings
    from llmexplore.networks.encoders import encoder_class

    run = RunSettings.from_cfg(cfg).run
    return encoder_class(run.encoder)(cfg, obs_space, run.policy_keys)
