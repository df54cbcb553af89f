"""NetHack's side of the text Motif and ONI judge: the message the game printed (``EnvFamily.message_text``).

NetHack prints its own 256-byte ``message``, so nothing is added to the env; a Motif pair dataset keeps
the bottom-line stats and the terminal beside it (as Motif's published dataset does), and its ``info/``
figures (score, turns, depth, ...) come from the bottom line. MiniHack shares all of it.
"""

from __future__ import annotations

from typing import Mapping

import gymnasium as gym
import numpy as np
from nle import nethack

#: info array name -> index in NLE's bottom-line stats
INFO_FROM_BLSTATS = {
    "score": nethack.NLE_BL_SCORE,
    "turns": nethack.NLE_BL_TIME,
    "experience_level": nethack.NLE_BL_XP,
    "depth": nethack.NLE_BL_DEPTH,
    "level_num": nethack.NLE_BL_DLEVEL,
    "gold": nethack.NLE_BL_GOLD,
}


class NetHackMessages:
    """The ``MessageSource`` of NetHack and MiniHack."""

    extra_keys: tuple[str, ...] = ("tty_chars", "tty_colors")
    data_keys: tuple[str, ...] = ("blstats", "tty_chars", "tty_colors")

    def wrap(self, env: gym.Env) -> gym.Env:
        """The env as it is: NetHack's observations carry ``message``."""
        return env

    def playing(self, obs: Mapping[str, np.ndarray]) -> bool:
        """False on the game-over screen (maximum hit points 0)."""
        return bool(np.asarray(obs["blstats"])[nethack.NLE_BL_HPMAX] > 0)

    def info(self, data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Score, turns, experience level, depth, level number and gold of each observation, from blstats."""
        blstats = data["blstats"]
        return {name: blstats[..., index].astype(np.int64) for name, index in INFO_FROM_BLSTATS.items()}


SOURCE = NetHackMessages()
