"""Wizard-mode NetHack for tests: real game states on special levels, in shops and at altars.

NetHack's debug mode can level-teleport to a named special level (^V), map a level (^F)
and teleport to a chosen square (^T). The helpers below drive those commands through raw
keypresses so tests get states NetHack really produced (real messages, real glyphs)
without playing thousands of turns. Seeds fix the dungeon, so the scenes are repeatable.
"""

from __future__ import annotations


import numpy as np
from nle import nethack
from nle.env.base import NLE

from llmexplore.envs.nethack import practice
from llmexplore.envs.nethack.game_state import GameState

KEYS = ("glyphs", "chars", "blstats", "message", "inv_strs", "inv_letters", "tty_chars")
MONK = ("role:monk", "race:human", "align:neutral", "gender:male")
ESC = 27


#: the seeded dungeon lacks what a scene needs (e.g. Orcish Town has no shopkeepers)
SceneError = practice.SceneUnavailable


class WizardGame:
    """A wizard-mode game (an NLE env or one of our task classes) driven by raw keys."""

    def __init__(self, env: NLE):
        self.env = env
        self.skipped: list[bytes] = []
        self.obs = env.last_observation

    @classmethod
    def start(cls, seed: int, wizkit: tuple[str, ...] = (), env_class: type = NLE, **kwargs) -> "WizardGame":
        kwargs.setdefault("observation_keys", KEYS)
        env = env_class(wizard=True, options=tuple(nethack.NETHACKOPTIONS) + MONK, **kwargs)
        env.seed(seed, seed + 1, reseed=False)
        env.reset(options={"wizkit_items": list(wizkit)} if wizkit else None)
        return cls(env)

    # -- observation ---------------------------------------------------------------------------
    def _get(self, key: str) -> np.ndarray:
        return self.obs[self.env._observation_keys.index(key)]

    @property
    def message(self) -> str:
        return bytes(self._get("message")).split(b"\0", 1)[0].decode("latin-1")

    @property
    def screen(self) -> str:
        return "\n".join(bytes(r).decode("latin-1") for r in self._get("tty_chars"))

    @property
    def position(self) -> tuple[int, int]:
        bl = self._get("blstats")
        return int(bl[nethack.NLE_BL_X]), int(bl[nethack.NLE_BL_Y])

    def state(self) -> GameState:
        """The current state with the messages skipped since the last call; clears them."""
        s = GameState.from_arrays(
            self._get("blstats"), self._get("message"), self._get("glyphs"), self._get("chars"),
            self._get("inv_strs"), skipped=self.skipped,
        )
        self.skipped = []
        return s

    def letter(self, text: str) -> str:
        """The inventory letter of the first item whose description contains ``text``."""
        for letter, row in zip(self._get("inv_letters"), self._get("inv_strs")):
            if letter and text in bytes(row).split(b"\0", 1)[0].decode("latin-1"):
                return chr(letter)
        raise SceneError(f"no inventory item matching {text!r}")

    def unidentified_potions(self) -> list[str]:
        """Letters of potions shown by appearance only ("a murky potion"), in inventory order."""
        rows = zip(self._get("inv_letters"), self._get("inv_strs"))
        return [chr(c) for c, row in rows if c and bytes(row).split(b"\0", 1)[0].endswith(b" potion")]

    def find(self, glyphs: np.ndarray) -> list[tuple[int, int]]:
        """Map squares (x, y) showing one of ``glyphs``."""
        return [(int(x), int(y)) for y, x in np.argwhere(np.isin(self._get("glyphs"), glyphs))]

    # -- keys ----------------------------------------------------------------------------------
    def press(self, keys: str | int, dismiss_more: bool = True) -> "WizardGame":
        for k in [keys] if isinstance(keys, int) else keys:
            self.obs, done = self.env.nethack.step(k if isinstance(k, int) else ord(k))
            assert not done, "the wizard game ended"
        while dismiss_more and self.obs[self.env._internal_index][3]:  # --More--
            self.skipped.append(bytes(self._get("message")).rstrip(b"\0"))
            self.obs, _ = self.env.nethack.step(ord("\r"))
        self.env.last_observation = self.obs  # keep a task env's view in step with the raw keys
        return self

    def level_teleport(self, name: str) -> "WizardGame":
        practice.level_teleport(self, name)
        return self

    def level_teleport_depth(self, depth: int) -> "WizardGame":
        self.press(nethack.C("v"), dismiss_more=False)
        return self.press(f"{depth}\r")

    def map_level(self) -> "WizardGame":
        return self.press(nethack.C("f"))

    def teleport(self, x: int, y: int) -> "WizardGame":
        practice.teleport(self, x, y)
        return self

    def teleport_to_symbol(self, symbol: str) -> "WizardGame":
        """^T with getpos's jump key (e.g. '_' altar, '<' up stairs) on a mapped level."""
        return self.press(nethack.C("t"), dismiss_more=False).press(symbol, dismiss_more=False).press(".")

    def quaff_detection(self, letter: str) -> np.ndarray:
        """Quaff a detection potion; return the glyphs while the detected things show."""
        self.press("q", dismiss_more=False).press(letter, dismiss_more=False)
        glyphs = self._get("glyphs").copy()
        while "For instructions" in self.message or self.obs[self.env._internal_index][3]:
            self.press(ESC, dismiss_more=False)
        return glyphs

    def wish(self, item: str) -> "WizardGame":
        return self.press(nethack.C("w"), dismiss_more=False).press(item + "\r")

    def close(self) -> None:
        self.env.close()


def monster_squares(glyphs: np.ndarray, name: str) -> list[tuple[int, int]]:
    """(x, y) of every square showing the monster ``name`` (as seen, tame or detected)."""
    out = []
    for y, x in zip(*np.nonzero(glyphs)):
        g = int(glyphs[y, x])
        if nethack.glyph_is_monster(g) and nethack.permonst(nethack.glyph_to_mon(g)).mname == name:
            out.append((int(x), int(y)))
    return out


def enter_shop(game: WizardGame, object_glyphs: np.ndarray, monster_glyphs: np.ndarray) -> None:
    """Teleport onto a detected object next to a detected shopkeeper (inside the shop)."""
    keepers = monster_squares(monster_glyphs, "shopkeeper")
    if not keepers:
        raise SceneError("no shopkeeper on this level")
    objects = [(int(x), int(y)) for y, x in np.argwhere(
        np.vectorize(nethack.glyph_is_object)(object_glyphs)
    )]
    best = min(
        ((max(abs(ox - kx), abs(oy - ky)), ox, oy) for ox, oy in objects for kx, ky in keepers
         if 1 <= max(abs(ox - kx), abs(oy - ky)) <= 3),
        default=None,
    )
    if best is None:
        raise SceneError("no wares next to a shopkeeper")
    game.teleport(best[1], best[2])
