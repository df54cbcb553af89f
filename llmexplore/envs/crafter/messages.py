"""Crafter's side of the text Motif and ONI judge (``EnvFamily.message_text``): ELLM's caption as a message.

Crafter prints no messages, so the caption of each observation (what is in view, faced, held and felt:
``text.caption``) is written under the observation key ``message`` in NetHack's format (256 NUL-padded
bytes). Motif's reward model and ONI's models read those bytes, and their annotators read the same text.
A pair dataset keeps the three keys the caption is made from, so any pair can be captioned again.
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from llmexplore.envs.crafter.text import MESSAGE_BYTES, message

MESSAGE_KEY = "message"


class CaptionMessage(gym.ObservationWrapper):
    """Adds ``message``: the observation's caption as ``MESSAGE_BYTES`` uint8 (``text.message``)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        spaces = dict(env.observation_space.spaces)
        spaces[MESSAGE_KEY] = gym.spaces.Box(0, 255, (MESSAGE_BYTES,), np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The observation with its caption's bytes under ``message``, in place."""
        observation[MESSAGE_KEY] = message(observation)
        return observation


class CrafterMessages:
    """The ``MessageSource`` of Crafter."""

    extra_keys: tuple[str, ...] = ()
    data_keys: tuple[str, ...] = ("inventory", "local_semantic", "facing")

    def wrap(self, env: gym.Env) -> gym.Env:
        """The env with ``CaptionMessage`` outside it, unless its observations carry ``message`` already."""
        return env if MESSAGE_KEY in env.observation_space.spaces else CaptionMessage(env)

    def playing(self, obs: Mapping[str, Any]) -> bool:
        """Always: an episode ends on the step the player dies, so every observation shows a game."""
        return True

    def info(self, data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """None: a Crafter observation shows no score (achievements are unlocked by steps, not states)."""
        return {}


SOURCE = CrafterMessages()
