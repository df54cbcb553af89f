"""Practice tasks for MaestroMotif's skills: every episode starts where a rarely used skill can act.

From the normal start on dungeon level 1 the worshipper and the merchant almost never start
(their initiation needs an altar or a shopkeeper within four squares) and the ascender seldom
does. ``nethack:maestro-practice`` is ``nethack:maestro-score`` (same reward, actions and
questions) whose reset() sets a *scene* before the agent's first observation, with NetHack's
wizard (debug) mode driven by raw keys:

* ``shop``: level-teleport (^V) to Minetown, find the shopkeepers with a wished (^W) potion of
  monster detection, map the level (^F) and teleport (^T) onto a floor square beside one, inside
  its shop. Orcish Town (one Minetown in seven) has no shopkeepers: that game cannot hold the scene.
* ``altar``: level-teleport to dungeon level 5-8 of the Dungeons of Doom, wish for an altar (wizard
  mode turns the hero's square into one, of a random alignment) and step off it, so the altar is in view.

In both scenes the hero then gets ``PRACTICE_ITEMS`` (a random potion, scroll and ring, wished
for), which it did not start with: the task's drop question names only such items (as
MaestroMotif's drop macro did), so without them the worshipper would have nothing to test on
the altar and the merchant nothing to sell, however well it learned.

Both scenes lie deeper than the training policy's target depths (2-4), so once the discoverer has
explored, the policy climbs with the ascender. A scene is picked per episode from the episode's
NetHack seeds, so a seed fixes the scene and the game. A game that cannot hold its scene is
restarted with seeds derived from the episode's (attempt 1, 2, ...): still reproducible.

Wizard mode is used at reset only and gives the agent nothing: its actions (``MAESTRO_ACTIONS``)
hold no debug command. Messages of the set-up never reach the agent or the episode stats; the
step counter and the time penalty start at the agent's first step. Where wizard mode changes the
game itself, this task restores the normal behaviour:

* death asks "Die?" (a "no" revives the hero): answered yes, so episodes end on death;
* a teleport lets the hero choose the destination ("Where do you want to be teleported?"): the
  hero's own square is chosen, which on a teleport trap means NetHack's random teleport (after a
  "Sorry..." the agent sees);
* praying asks "Force the gods to be pleased?": declined, like every question NLE declines.

Left as wizard mode has them: the hero is named "wizard" (shopkeepers greet "Hello, wizard!"); a
level teleporter asks for a level and the declined question keeps the hero on its level; the
``shop`` scene leaves the level mapped and the potion of monster detection known, and a pet that
stood next to the hero follows it to the scene's level. Autopickup is off while the hero is moved,
so it starts with its own kit and the practice items only. The episode stats ``depth`` and
``progression`` count the scene's depth.
"""

from __future__ import annotations

import re
from typing import Callable, ClassVar, Protocol, Sequence

import numpy as np
from nle import nethack

from llmexplore.envs.nethack import tasks, zero_shot
from llmexplore.envs.nethack.compat import core_disp_reseed
from llmexplore.errors import ConfigError, shown

SCENES = ("shop", "altar")
#: games tried per episode before giving up (one Minetown in seven has no shop)
MAX_ATTEMPTS = 10
#: depths of the altar scene's level: as deep as Minetown (Mines levels 3-4 lie at depth 5-8)
ALTAR_DEPTHS = (5, 6, 7, 8)
#: the scene is ready when what it is for shows within this many squares (the skills' "nearby")
SCENE_RADIUS = 4
#: wished for in every scene: unidentified items of random curse status, to test on an altar or sell
PRACTICE_ITEMS = ("potion", "scroll", "ring")

#: wizard mode's questions that a normal game does not ask (answered as a normal game plays on)
DIE_PROMPT = b"Die?"
TELEPORT_PROMPT = b"Where do you want to be teleported?"
#: such answers per step at most (a guard: each question comes once)
MAX_WIZARD_ANSWERS = 4
ESC = tasks.ASCII_ESC
TOGGLE_AUTOPICKUP = "@"
_ROOM_FLOOR = (19, 20)  # S_room, S_darkroom in NetHack 3.6's defsym table
_S_ALTAR = 27
FLOOR_GLYPHS = np.array([nethack.GLYPH_CMAP_OFF + s for s in _ROOM_FLOOR])
ALTAR_GLYPH = nethack.GLYPH_CMAP_OFF + _S_ALTAR
_MONSTER_OFFSETS = (
    nethack.GLYPH_MON_OFF, nethack.GLYPH_PET_OFF, nethack.GLYPH_DETECT_OFF, nethack.GLYPH_RIDDEN_OFF
)
_NEIGHBOURS = ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1))
_MOVE_KEYS = {(-1, -1): "y", (0, -1): "k", (1, -1): "u", (-1, 0): "h", (1, 0): "l", (-1, 1): "b", (0, 1): "j",
              (1, 1): "n"}
_CHARACTER_KEYS = ("role", "race", "align", "gender")


def _monster_glyphs(name: str) -> np.ndarray:
    for index in range(nethack.NUMMONS):
        if nethack.permonst(index).mname == name:
            return np.array([offset + index for offset in _MONSTER_OFFSETS])
    raise RuntimeError(f"NLE has no monster named {name!r}")


SHOPKEEPER_GLYPHS = _monster_glyphs("shopkeeper")


class SceneUnavailable(RuntimeError):
    """This game cannot hold the scene (e.g. Orcish Town has no shopkeepers): try other seeds."""


class WizardKeys:
    """Raw keypresses into a wizard-mode task env during reset; the agent sees none of them."""

    def __init__(self, env: "NetHackPractice"):
        self.env = env
        self._tty_index = env._observation_keys.index("tty_chars")
        #: every message shown while keys were pressed
        self.messages: list[bytes] = []

    # -- reading -------------------------------------------------------------------------------
    @property
    def glyphs(self) -> np.ndarray:
        """(21, 79) int16 glyph ids now showing: NLE's buffer, which the next key overwrites."""
        return self.env.last_observation[self.env._glyph_index]

    @property
    def message(self) -> bytes:
        """The message line now showing, as bytes up to the first NUL."""
        return bytes(self.env.last_observation[self.env._message_index]).split(b"\0", 1)[0]

    @property
    def screen(self) -> str:
        """The 24 x 80 terminal now showing, one text line per row (menus are read from it)."""
        return "\n".join(bytes(r).decode("latin-1") for r in self.env.last_observation[self._tty_index])

    @property
    def position(self) -> tuple[int, int]:
        """The hero's map square as (x, y): column, row."""
        blstats = self.env.last_observation[self.env._blstats_index]
        return int(blstats[nethack.NLE_BL_X]), int(blstats[nethack.NLE_BL_Y])

    def near(self, glyphs: np.ndarray, radius: int = SCENE_RADIUS) -> bool:
        """Whether one of ``glyphs`` shows within ``radius`` squares of the hero."""
        x, y = self.position
        window = self.glyphs[max(y - radius, 0):y + radius + 1, max(x - radius, 0):x + radius + 1]
        return bool(np.isin(window, glyphs).any())

    # -- keys ----------------------------------------------------------------------------------
    def press(self, keys: str | int, dismiss_more: bool = True) -> "WizardKeys":
        """Send keys (a string, or one key code), then dismiss --More-- unless
        told not to; returns self. SceneUnavailable when the game ends."""
        env = self.env
        for key in [keys] if isinstance(keys, int) else keys:
            self._step(key if isinstance(key, int) else ord(key))
        while dismiss_more and env.last_observation[env._internal_index][3]:  # --More--
            self._step(ord("\r"))
        return self

    def _step(self, key: int) -> None:
        self.env.last_observation, done = self.env.nethack.step(key)
        if done:
            raise SceneUnavailable("the game ended while the scene was set")
        if self.message:
            self.messages.append(self.message)

    def level_teleport(self, name: str) -> "WizardKeys":
        """Go to the special level whose menu entry names ``name`` (e.g. "minetn"); SceneUnavailable when none does."""
        level_teleport(self, name)
        return self

    def level_teleport_depth(self, depth: int) -> "WizardKeys":
        """^V to ``depth`` of the current dungeon."""
        return self.press(nethack.C("v"), dismiss_more=False).press(f"{depth}\r")

    def wish(self, text: str, dismiss_more: bool = True) -> "WizardKeys":
        """^W: wish for ``text`` (wizard mode grants it; "altar" turns the hero's square into one)."""
        return self.press(nethack.C("w"), dismiss_more=False).press(text + "\r", dismiss_more)

    def wish_item(self, text: str) -> str:
        """Wish for an item; its inventory letter ("j - an orange potion.": the name may be unknown)."""
        match = re.match(rb"(\w) - ", self.wish(text, dismiss_more=False).message)
        self.press(ESC)
        if not match:
            raise SceneUnavailable(f"the wish for {text!r} gave no item")
        return match.group(1).decode()

    def map_level(self) -> "WizardKeys":
        """^F: map the whole current level."""
        return self.press(nethack.C("f"))

    def teleport(self, x: int, y: int) -> "WizardKeys":
        """^T to square (x, y); NetHack may refuse and put the hero elsewhere, so check ``position``."""
        teleport(self, x, y)
        return self

    def quaff_detection(self, letter: str) -> np.ndarray:
        """Quaff a detection potion; return the glyphs while the detected things show."""
        seen = len(self.messages)
        self.press("q", dismiss_more=False).press(letter, dismiss_more=False)
        if not any(b"You sense the presence of" in m for m in self.messages[seen:]):  # a milky potion's ghost...
            raise SceneUnavailable(f"the potion detected nothing: {self.messages[seen:]}")
        glyphs = self.glyphs.copy()
        for _ in range(10):
            waiting = self.env.last_observation[self.env._internal_index][3]
            if not waiting and b"For instructions" not in self.message:
                break
            self.press(ESC, dismiss_more=False)
        return glyphs


# -- wizard commands, shared with the wizard-mode test helper (tests/helpers/nethack_wizard.py) ----
class KeyDriver(Protocol):
    """Anything that presses raw keys into a wizard-mode game and shows its screen and hero."""

    @property
    def screen(self) -> str:
        """The terminal now showing, rows joined by newlines."""
        ...

    @property
    def position(self) -> tuple[int, int]:
        """The hero's map square as (x, y)."""
        ...

    def press(self, keys: str | int, dismiss_more: bool = True) -> object:
        """Press keys (a string, or one key code), then dismiss --More-- when ``dismiss_more``."""
        ...


def level_teleport(keys: KeyDriver, name: str) -> None:
    """^V and the menu of special levels: go to the level whose entry names ``name``."""
    for key in (nethack.C("v"), "?", "\r"):
        keys.press(key, dismiss_more=False)
    for _ in range(4):
        match = re.search(r"(\w) - [ *]+" + re.escape(name), keys.screen)
        if match:
            keys.press(match.group(1))  # a pick-one menu closes on its letter
            return
        keys.press(">", dismiss_more=False)
    keys.press(ESC)
    raise SceneUnavailable(f"no level '{name}' in the level-teleport menu")


def teleport(keys: KeyDriver, x: int, y: int) -> None:
    """^T and move the cursor from the hero to (x, y)."""
    px, py = keys.position
    dx, dy = x - px, y - py
    moves = ("L" if dx > 0 else "H") * (abs(dx) // 8) + ("l" if dx > 0 else "h") * (abs(dx) % 8)
    moves += ("J" if dy > 0 else "K") * (abs(dy) // 8) + ("j" if dy > 0 else "k") * (abs(dy) % 8)
    keys.press(nethack.C("t"), dismiss_more=False).press(moves, dismiss_more=False).press(".")


# -- scenes ------------------------------------------------------------------------------------
def _squares(glyphs: np.ndarray, wanted: np.ndarray) -> list[tuple[int, int]]:
    return [(int(x), int(y)) for y, x in np.argwhere(np.isin(glyphs, wanted))]


def _floor_beside(glyphs: np.ndarray, x: int, y: int, objects: bool = False) -> list[tuple[int, int]]:
    """Squares next to (x, y) that show a room's bare floor (or, with ``objects``, an object)."""
    rows, cols = glyphs.shape
    out = []
    for dx, dy in _NEIGHBOURS:
        if 0 <= x + dx < cols and 0 <= y + dy < rows:
            glyph = int(glyphs[y + dy, x + dx])
            if glyph in FLOOR_GLYPHS or (objects and nethack.glyph_is_object(glyph)):
                out.append((x + dx, y + dy))
    return out


def shop_scene(keys: WizardKeys, rng: np.random.Generator) -> None:
    """Inside a Minetown shop, beside its shopkeeper."""
    keys.level_teleport("minetn")
    detected = keys.quaff_detection(keys.wish_item("uncursed potion of monster detection"))
    keepers = _squares(detected, SHOPKEEPER_GLYPHS)
    if not keepers:
        raise SceneUnavailable("this Minetown has no shopkeeper (Orcish Town)")
    keys.map_level()
    spots = sorted({spot for kx, ky in keepers for spot in _floor_beside(keys.glyphs, kx, ky, objects=True)
                    if not nethack.glyph_is_monster(int(detected[spot[1], spot[0]]))})  # shops hide mimics
    for index in rng.permutation(len(spots))[:3]:  # a spot NetHack refuses sends the hero elsewhere
        keys.teleport(*spots[index])
        if keys.position == spots[index] and keys.near(SHOPKEEPER_GLYPHS):
            return
    raise SceneUnavailable("no free floor square beside a shopkeeper")


def altar_scene(keys: WizardKeys, rng: np.random.Generator) -> None:
    """Beside a new altar on a level of the Dungeons of Doom at depth 5-8."""
    keys.level_teleport_depth(ALTAR_DEPTHS[int(rng.integers(len(ALTAR_DEPTHS)))])
    _step_to_bare_floor(keys, rng)  # the landing square may hold objects, which would hide the altar
    keys.wish("altar")  # wizard mode turns the hero's square into an altar
    _step_to_bare_floor(keys, rng)  # the hero hides what it stands on
    if not keys.near(np.array([ALTAR_GLYPH]), radius=1):
        raise SceneUnavailable("no altar beside the hero")


def _step_to_bare_floor(keys: WizardKeys, rng: np.random.Generator) -> None:
    """One step onto a neighbouring square that shows bare floor (no object, no monster)."""
    x, y = keys.position
    steps = _floor_beside(keys.glyphs, x, y)
    if not steps:
        raise SceneUnavailable("no bare floor beside the hero")
    tx, ty = steps[int(rng.integers(len(steps)))]
    keys.press(_MOVE_KEYS[(tx - x, ty - y)])
    if keys.position != (tx, ty):
        raise SceneUnavailable("the hero could not step aside")


SCENE_FUNCTIONS: dict[str, Callable[[WizardKeys, np.random.Generator], None]] = {
    "shop": shop_scene,
    "altar": altar_scene,
}


def character_options(character: str) -> tuple[str, ...]:
    """NetHack options for NLE's character string ("mon-hum-neu-mal"): wizard mode names the hero
    "wizard", so the character NLE reads from the player name must be given as options."""
    parts = character.split("-")
    if parts == ["@"]:
        return ()
    if len(parts) != len(_CHARACTER_KEYS):
        raise ConfigError(f"unknown NetHack character {shown(character)}", hint="use role-race-align-gender, "
                          "e.g. 'mon-hum-neu-mal', or '@' for a random one")
    return tuple(f"{key}:{value}" for key, value in zip(_CHARACTER_KEYS, parts))


def _derived_seeds(core: int, disp: int, attempt: int) -> tuple[int, int]:
    derived = np.random.SeedSequence([core, disp, attempt]).generate_state(2, np.uint64)
    return int(derived[0]) >> 1, int(derived[1]) >> 1


class NetHackPractice(zero_shot.NetHackInteractive):
    """``maestro-score`` starting each episode in a practice scene (module docstring).

    ``scenes`` limits the scenes drawn from (all of ``SCENES`` by default); ``scene`` names the
    current episode's; ``attempts`` counts the games its reset tried and ``failures`` says why the
    games before the last could not hold the scene.
    """

    #: "Die?" waits for the task's answer (NLE's default, ESC, means no and revives the hero)
    skip_exceptions: ClassVar[tuple[bytes, ...]] = (*zero_shot.NetHackInteractive.skip_exceptions, DIE_PROMPT)

    def __init__(self, *args, scenes: Sequence[str] = SCENES, **kwargs):
        unknown = [s for s in scenes if s not in SCENE_FUNCTIONS]
        if unknown or not scenes:
            raise ConfigError(f"unknown practice scenes {unknown or list(scenes)}",
                              hint=f"choose from {list(SCENES)}")
        keys = kwargs.get("observation_keys")
        if keys is not None:  # the level-teleport menu is read from the terminal
            kwargs["observation_keys"] = tuple(dict.fromkeys((*keys, "tty_chars")))
        kwargs["wizard"] = True
        if kwargs.get("options") is None:
            kwargs["options"] = tuple(nethack.NETHACKOPTIONS) + character_options(
                kwargs.get("character", "mon-hum-neu-mal"))
        super().__init__(*args, **kwargs)
        self.scenes = tuple(scenes)
        self.scene = ""
        self.attempts = 0
        self.failures: list[str] = []
        self._seeds: tuple[int, int, bool] | None = None

    def seed(self, core=None, disp=None, reseed=False):
        """NLE's seeding, with the seeds kept for the next reset: they pick its scene and derive its retry games."""
        self._seeds = core_disp_reseed(super().seed(core, disp, reseed))  # NLE 1.3 adds a fourth, lgen
        return self._seeds

    def reset(self, seed=None, options=None):
        """A plain reset, then wizard keys set the scene and wish the practice items; a game that
        cannot hold the scene is retried on derived seeds (RuntimeError after MAX_ATTEMPTS)."""
        core, disp, reseed = self._seeds if self._seeds is not None else self.seed()
        self._seeds = None  # an unseeded next episode draws new seeds
        self.scene = self.scenes[int(np.random.default_rng([core, disp, 0]).integers(len(self.scenes)))]
        self.failures = []
        for attempt in range(MAX_ATTEMPTS):
            self.attempts = attempt + 1
            game_seeds = (core, disp) if attempt == 0 else _derived_seeds(core, disp, attempt)
            self.nethack.set_initial_seeds(*game_seeds, reseed)
            super().reset(seed=seed, options=options)
            keys = WizardKeys(self)
            try:
                keys.press(TOGGLE_AUTOPICKUP)  # off while the hero is moved: it lands on shop wares
                SCENE_FUNCTIONS[self.scene](keys, np.random.default_rng([*game_seeds, 1]))
                for item in PRACTICE_ITEMS:
                    keys.wish_item(item)
                keys.press(TOGGLE_AUTOPICKUP)
            except SceneUnavailable as exc:
                self.failures.append(str(exc))
                continue
            return self._begin_episode()
        raise RuntimeError(f"no game in {MAX_ATTEMPTS} could hold the '{self.scene}' scene: {self.failures}")

    def _begin_episode(self):
        """The agent's first observation: the set-up's messages cleared, its clock at zero.

        The start letters (items the drop question never names) stay those of the kit, read by the
        plain reset before the scene: the practice items are there to be dropped.
        """
        WizardKeys(self).press(ESC)  # ESC at the command prompt takes no time and shows no message
        self._frozen_steps = 0
        self.more_messages = []
        self._steps = 0
        status = self._get_end_status(self.last_observation, False)
        return self._get_observation(self.last_observation), self._get_information(status)

    def _perform_known_steps(self, observation, done, exceptions=True):
        observation, done = super()._perform_known_steps(observation, done, exceptions)
        for _ in range(MAX_WIZARD_ANSWERS):
            if done:
                break
            message = bytes(observation[self._message_index])
            if observation[self._internal_index][1] and DIE_PROMPT in message:
                key = ord("y")  # wizard mode's "Die?": a normal game has no choice
            elif TELEPORT_PROMPT in message:
                key = ord(".")  # wizard mode's teleport control: the hero's own square (on a trap: random)
            else:
                break
            observation, done = self.nethack.step(key)
            observation, done = super()._perform_known_steps(observation, done, exceptions)
        return observation, done
