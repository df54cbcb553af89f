"""A read-only snapshot of the NetHack game state, built from NLE observation arrays.

Zero-shot task predicates (``goals.py``) are pure functions of snapshots and a small
episode memory, so they can be tested on scripted or recorded states without a game.
A snapshot copies the arrays it keeps: NLE reuses its buffers from step to step.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
from nle import nethack

from llmexplore.envs.nethack.text import decode_message
from llmexplore.errors import ConfigError, shown

#: what NetHack says when the player kills a monster ("You kill the newt!", "You destroy the
#: zombie!" for the undead and golems); a pet's or another monster's kill does not match
_KILL = re.compile(rb"\bYou (?:kill|destroy)\b")
_KILL_FIRST = b"You"


def count_kills(message: bytes | str) -> int:
    """Kills the player made, as announced in one message line."""
    if isinstance(message, str):
        message = message.encode("latin-1", "replace")
    return len(_KILL.findall(message)) if _KILL_FIRST in message else 0


class Dungeon(enum.IntEnum):
    """``u.uz.dnum`` (blstats ``NLE_BL_DNUM``): dungeons in NetHack 3.6's dungeon.def order."""

    DUNGEONS_OF_DOOM = 0
    GEHENNOM = 1
    GNOMISH_MINES = 2
    QUEST = 3
    SOKOBAN = 4
    FORT_LUDIOS = 5
    VLADS_TOWER = 6
    ELEMENTAL_PLANES = 7


class Hunger(enum.IntEnum):
    """``u.uhs`` (blstats ``NLE_BL_HUNGER``); a new game starts NOT_HUNGRY (1)."""

    SATIATED = 0
    NOT_HUNGRY = 1
    HUNGRY = 2
    WEAK = 3
    FAINTING = 4
    FAINTED = 5
    STARVED = 6


#: blstats fields by short name, for ``GameState.stat`` and scripted states
BLSTATS = {
    "x": nethack.NLE_BL_X,
    "y": nethack.NLE_BL_Y,
    "score": nethack.NLE_BL_SCORE,
    "hp": nethack.NLE_BL_HP,
    "hpmax": nethack.NLE_BL_HPMAX,
    "depth": nethack.NLE_BL_DEPTH,
    "gold": nethack.NLE_BL_GOLD,
    "xp_level": nethack.NLE_BL_XP,
    "time": nethack.NLE_BL_TIME,
    "hunger": nethack.NLE_BL_HUNGER,
    "dnum": nethack.NLE_BL_DNUM,
    "dlevel": nethack.NLE_BL_DLEVEL,
    "condition": nethack.NLE_BL_CONDITION,
}


def _frozen(array: np.ndarray | None, dtype=None) -> np.ndarray | None:
    if array is None:
        return None
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False, repr=False)
class GameState:
    """What the agent could know at one step: status line, messages, map glyphs, inventory.

    ``message`` is the line shown after the step; ``skipped`` holds the messages NetHack
    showed behind "--More--" during the step (``NetHackScore.more_messages``), which the
    agent never sees but which still say what happened (a sale, a kill, an altar flash).
    """

    blstats: np.ndarray
    message: str = ""
    skipped: tuple[str, ...] = ()
    glyphs: np.ndarray | None = None
    chars: np.ndarray | None = None
    inv_strs: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_arrays(
        cls,
        blstats: np.ndarray,
        message: np.ndarray | str = "",
        glyphs: np.ndarray | None = None,
        chars: np.ndarray | None = None,
        inv_strs: np.ndarray | None = None,
        skipped: Sequence[bytes | str] = (),
    ) -> "GameState":
        """A snapshot of NLE arrays: copied read-only, blstats as int64, a byte
        message decoded; ConfigError unless blstats has NLE's 27 fields."""
        blstats = np.asarray(blstats)
        if blstats.shape != (nethack.NLE_BLSTATS_SIZE,):
            raise ConfigError(f"blstats must have shape ({nethack.NLE_BLSTATS_SIZE},), got {blstats.shape}")
        text = message if isinstance(message, str) else decode_message(message)
        return cls(
            blstats=_frozen(blstats, np.int64),
            message=text,
            skipped=tuple(m if isinstance(m, str) else m.decode("latin-1") for m in skipped),
            glyphs=_frozen(glyphs),
            chars=_frozen(chars),
            inv_strs=_frozen(inv_strs),
        )

    @classmethod
    def from_observation(
        cls, obs: Mapping[str, np.ndarray], skipped: Sequence[bytes | str] = ()
    ) -> "GameState":
        """From an NLE observation dict (keys ``blstats``, ``message`` and optionally more)."""
        missing = [k for k in ("blstats", "message") if k not in obs]
        if missing:
            raise ConfigError(f"observation lacks {missing} (has {sorted(obs)})")
        return cls.from_arrays(
            obs["blstats"], obs["message"], obs.get("glyphs"), obs.get("chars"), obs.get("inv_strs"), skipped
        )

    def __repr__(self) -> str:
        where = f"dnum={self.dnum}, dlevel={self.dlevel}, depth={self.depth}, xp={self.xp_level}"
        where += f", gold={self.gold}"
        return f"GameState({where}, message={self.message!r}, skipped={self.skipped!r})"

    # -- status line ------------------------------------------------------------------------
    def stat(self, name: str) -> int:
        """A blstats field by short name (see ``BLSTATS``)."""
        if name not in BLSTATS:
            raise ConfigError(f"unknown blstats field {shown(name)}", hint=f"choose from {sorted(BLSTATS)}")
        return int(self.blstats[BLSTATS[name]])

    dnum = property(lambda self: int(self.blstats[nethack.NLE_BL_DNUM]))
    dlevel = property(lambda self: int(self.blstats[nethack.NLE_BL_DLEVEL]))
    depth = property(lambda self: int(self.blstats[nethack.NLE_BL_DEPTH]))
    gold = property(lambda self: int(self.blstats[nethack.NLE_BL_GOLD]))
    xp_level = property(lambda self: int(self.blstats[nethack.NLE_BL_XP]))
    hunger = property(lambda self: int(self.blstats[nethack.NLE_BL_HUNGER]))
    time = property(lambda self: int(self.blstats[nethack.NLE_BL_TIME]))

    @property
    def in_game(self) -> bool:
        """False before the game starts and after it ends, when NLE's blstats read zero."""
        return int(self.blstats[nethack.NLE_BL_HPMAX]) > 0

    @property
    def hallucinating(self) -> bool:
        """The hallucination bit of the condition mask: while set, the map's monster glyphs are random."""
        return bool(int(self.blstats[nethack.NLE_BL_CONDITION]) & nethack.BL_MASK_HALLU)

    # -- messages ---------------------------------------------------------------------------
    @property
    def messages(self) -> tuple[str, ...]:
        """Every message of the step in the order shown: the skipped ones, then the last."""
        return self.skipped + (self.message,) if self.message else self.skipped

    @cached_property
    def sentences(self) -> tuple[str, ...]:
        """The step's messages split where NetHack joins two messages on one line (two spaces)."""
        return tuple(s.strip() for m in self.messages for s in m.split("  ") if s.strip())

    def said(self, pattern: re.Pattern[str]) -> bool:
        """Whether ``pattern`` matches in a message of the step, skipped ones included (each searched whole)."""
        return any(pattern.search(m) for m in self.messages)

    # -- map and inventory ------------------------------------------------------------------
    def glyph_count(self, glyphs: np.ndarray) -> int:
        """How many map squares show one of ``glyphs`` (0 when the snapshot has no map)."""
        if self.glyphs is None:
            return 0
        return int(np.isin(self.glyphs, glyphs).sum())

    def sees_any(self, glyphs: np.ndarray) -> bool:
        """Whether a map square shows one of ``glyphs``; False when the snapshot has no map."""
        return self.glyphs is not None and bool(np.isin(self.glyphs, glyphs).any())

    @cached_property
    def inventory(self) -> tuple[str, ...]:
        """Inventory lines as NetHack writes them ("a blessed +1 mace (weapon in hand)")."""
        if self.inv_strs is None:
            return ()
        rows = (bytes(row).split(b"\0", 1)[0].decode("latin-1") for row in self.inv_strs)
        return tuple(r for r in rows if r)
