"""The observation interface generated code reads: plain Python values built from NLE arrays.

Generated functions never see numpy arrays or game objects, only a dict ``obs`` of ints,
floats, strings, tuples and small dicts (so nothing they touch has a dangerous attribute,
and the validator can check every key they read against ``OBS_FIELDS``). Fields:

* every bottom-line stat by name (``depth``, ``hitpoints``, ``gold``, ``time``, ...);
* ``message`` (the text on the top line), ``branch`` (``main``, ``mines``, ``sokoban``, ...);
* ``features``: counts of dungeon features and notable monsters shown anywhere on the
  current level's map (stairs, altars, fountains, shopkeepers, priests, ...), and
  ``nearby``: the same counts within 4 squares of the agent; ``here``: the dungeon feature
  the agent stands on. The map shows the agent on its own square, hiding what is under it,
  so ``GroundMemory`` remembers that square from the map before the agent stepped onto it
  and both counts include it (without it an altar or a staircase vanished from ``features``
  the moment the agent reached it);
* ``inventory`` (item descriptions) and ``num_items``;
* the skill's clock (``skill``, ``skill_turns``, ``skill_steps``, ``skill_start``) and episode
  counters (``episode_steps``, ``kills``, ``items_sold``, ``altar_tests``, ``max_depth``, ...);
* for policies over skills: ``available`` (skills whose initiation holds now) and ``rng`` (a
  uniform number in [0, 1) drawn by the suite, for random choices); there ``skill`` is the skill
  that just ended ('' at the start of an episode).

``FIELD_DOCS`` documents each field; docs/maestro.md and the code prompt show the same list,
and a test checks they agree.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

#: NLE's bottom-line stats in order (blstats index -> name)
BLSTAT_NAMES = (
    "x", "y", "strength_percentage", "strength", "dexterity", "constitution", "intelligence", "wisdom",
    "charisma", "score", "hitpoints", "max_hitpoints", "depth", "gold", "energy", "max_energy", "armor_class",
    "monster_level", "experience_level", "experience_points", "time", "hunger_state", "carrying_capacity",
    "dungeon_number", "level_number", "condition", "alignment",
)
BRANCHES = {0: "main", 1: "gehennom", 2: "mines", 3: "quest", 4: "sokoban", 5: "ludios", 6: "vlad",
            7: "planes"}

#: map features by NetHack's screen-symbol index (nethack.symdef)
_CMAP_FEATURES = {
    "stairs_down": (24, 26), "stairs_up": (23, 25), "altar": (27,), "grave": (28,), "throne": (29,),
    "sink": (30,), "fountain": (31,), "door": (12, 13, 14, 15, 16), "tree": (18,),
}
#: monsters worth naming, by NetHack's monster index
_MONSTER_FEATURES = {"shopkeeper": (267,), "priest": (271, 272), "watchman": (278, 279), "oracle": (270,)}
FEATURE_NAMES = tuple(_CMAP_FEATURES) + tuple(_MONSTER_FEATURES) + ("monsters", "pets", "objects")
#: features that can lie under the agent (``here``)
GROUND_FEATURES = tuple(_CMAP_FEATURES)
NEARBY_RADIUS = 4

SKILL_START_FIELDS = ("depth", "level_number", "dungeon_number", "experience_level", "gold", "time",
                      "num_items")
COUNTER_FIELDS = ("episode_steps", "kills", "items_sold", "altar_tests", "max_depth", "max_experience_level")

FIELD_DOCS: dict[str, str] = {
    **{name: "bottom-line stat (int)" for name in BLSTAT_NAMES},
    "depth": "dungeon depth of the current level (int, 1 at the start)",
    "dungeon_number": "dungeon branch number (int): 0 the main Dungeons of Doom, 2 the Gnomish Mines, "
                      "4 Sokoban",
    "level_number": "level number within the current branch (int)",
    "time": "game turns since the game began (int)",
    "hunger_state": "0 satiated, 1 not hungry, 2 hungry, 3 weak, 4 fainting (int)",
    "experience_level": "the agent's experience level (int)",
    "message": "the message on the top line of the screen (str, '' when none)",
    "branch": "name of the current branch (str): main, mines, sokoban, quest, gehennom, ludios, vlad or "
              "planes",
    "features": "counts (int) of things shown on the current level's map: " + ", ".join(FEATURE_NAMES),
    "nearby": f"the same counts within {NEARBY_RADIUS} squares of the agent",
    "here": "the dungeon feature the agent stands on (str): one of " + ", ".join(GROUND_FEATURES)
            + ", or '' for none or not known (just arrived on the level)",
    "inventory": "descriptions of the carried items (tuple of str), e.g. 'a blessed +1 long sword'",
    "num_items": "number of carried items (int)",
    "skill": "name of the active skill (str); for a policy over skills the skill that just ended "
             "('' at the start of an episode)",
    "skill_turns": "game turns since the active skill started (int)",
    "skill_steps": "agent actions since the active skill started (int)",
    "skill_start": "values when the active skill started (dict): " + ", ".join(SKILL_START_FIELDS),
    "episode_steps": "agent actions since the episode began (int)",
    "kills": "monsters the agent killed this episode (int)",
    "items_sold": "items the agent sold to shopkeepers this episode (int)",
    "altar_tests": "items whose blessed/cursed state an altar revealed this episode (int)",
    "max_depth": "deepest depth reached this episode (int)",
    "max_experience_level": "highest experience level reached this episode (int)",
    "available": "policies only: skills whose initiation holds now (tuple of str)",
    "rng": "policies only: a uniform random number in [0, 1) (float), for random choices",
}

#: the fields of ``obs`` as the validator checks them (nested dicts list their own keys)
OBS_FIELDS: dict[str, Any] = {name: None for name in FIELD_DOCS}
OBS_FIELDS["features"] = {name: None for name in FEATURE_NAMES}
OBS_FIELDS["nearby"] = {name: None for name in FEATURE_NAMES}
OBS_FIELDS["skill_start"] = {name: None for name in SKILL_START_FIELDS}

#: NLE observation keys the view needs besides message and blstats
RAW_KEYS = ("glyphs", "inv_strs")

_KILL = re.compile(r"\bYou (?:kill|destroy)\b")
_SOLD = re.compile(r"\bYou sold\b")
_ALTAR_TEST = re.compile(r"\b(?:black|amber) flash\b|\blands on the altar\b")


@lru_cache(maxsize=1)
def _glyph_table() -> np.ndarray:
    """glyph -> feature index (or -1), for one vectorised count per step (built on first use: listing
    methods or checking a grid imports no NLE)."""
    from nle import nethack

    table = np.full(nethack.MAX_GLYPH + 1, -1, dtype=np.int16)
    index = {name: i for i, name in enumerate(FEATURE_NAMES)}
    table[nethack.GLYPH_OBJ_OFF:nethack.GLYPH_CMAP_OFF] = index["objects"]
    table[nethack.GLYPH_BODY_OFF:nethack.GLYPH_BODY_OFF + nethack.NUMMONS] = index["objects"]
    for offset in (nethack.GLYPH_MON_OFF, nethack.GLYPH_DETECT_OFF, nethack.GLYPH_RIDDEN_OFF):
        table[offset:offset + nethack.NUMMONS] = index["monsters"]
    table[nethack.GLYPH_PET_OFF:nethack.GLYPH_PET_OFF + nethack.NUMMONS] = index["pets"]
    for name, monsters in _MONSTER_FEATURES.items():
        for mon in monsters:
            for offset in (nethack.GLYPH_MON_OFF, nethack.GLYPH_DETECT_OFF, nethack.GLYPH_RIDDEN_OFF):
                table[offset + mon] = index[name]
    for name, symbols in _CMAP_FEATURES.items():
        for sym in symbols:
            table[nethack.GLYPH_CMAP_OFF + sym] = index[name]
    return table


def feature_counts(glyphs: np.ndarray, agent: tuple[int, int] | None = None, under: int = -1) -> dict[str, int]:
    """Counts per feature; ``agent`` (row, column) counts as ``under`` (a feature index, -1 for
    nothing), not as the agent's own glyph (a monster)."""
    ids = _glyph_table()[np.asarray(glyphs, dtype=np.int64)]
    if agent is not None and 0 <= agent[0] < ids.shape[0] and 0 <= agent[1] < ids.shape[1]:
        ids[agent] = under
    counts = np.bincount(ids[ids >= 0], minlength=len(FEATURE_NAMES))
    return dict(zip(FEATURE_NAMES, counts.tolist()))


_GROUND = np.zeros(len(FEATURE_NAMES), dtype=bool)
_GROUND[: len(GROUND_FEATURES)] = True


class GroundMemory:
    """The dungeon feature under the agent (a feature index, -1 for none or not known).

    The agent's square shows the agent. What it covers is read from the previous step's map
    when the agent has moved since (stairs, altars and fountains do not move); on a new level
    it is unknown until the agent takes a step. A monster or an object shown on the square
    before the agent arrived hides the feature too: then it is unknown as well.
    """

    def __init__(self) -> None:
        from nle import nethack

        #: blstats indices of dungeon, level, row and column
        self._where_fields = (nethack.NLE_BL_DNUM, nethack.NLE_BL_DLEVEL, nethack.NLE_BL_Y, nethack.NLE_BL_X)
        self.reset()

    def reset(self) -> None:
        """Forget the last map and position: nothing is known under the agent until it moves."""
        self.under = -1
        self._glyphs: np.ndarray | None = None
        self._where: tuple[int, int, int, int] | None = None  # dungeon, level, row, column

    def update(self, glyphs: np.ndarray, blstats: np.ndarray) -> int:
        """The feature index under the agent now (-1: none or not known), read from the previous
        map when the agent moved within the same level; keeps this map for the next step."""
        dnum, dlevel, row, column = self._where_fields
        where = (int(blstats[dnum]), int(blstats[dlevel]), int(blstats[row]), int(blstats[column]))
        last = self._where
        if last is None or last[:2] != where[:2]:
            self.under = -1
        elif last[2:] != where[2:] and self._glyphs is not None:
            feature = int(_glyph_table()[int(self._glyphs[where[2], where[3]])])
            self.under = feature if feature >= 0 and _GROUND[feature] else -1
        self._glyphs = np.array(glyphs, copy=True)
        self._where = where
        return self.under


def inventory(inv_strs: np.ndarray) -> tuple[str, ...]:
    """Descriptions of the carried items, one per non-empty ``inv_strs`` row (latin-1, cached per inventory)."""
    rows = np.ascontiguousarray(inv_strs, dtype=np.uint8)
    return _inventory(rows.tobytes(), rows.shape[1])


@lru_cache(maxsize=256)
def _inventory(raw: bytes, width: int) -> tuple[str, ...]:
    """Decoded once per distinct inventory (it changes rarely; decoding 55 rows costs ~30 us)."""
    rows = [raw[i:i + width] for i in range(0, len(raw), width)]
    return tuple(row.split(b"\0", 1)[0].decode("latin-1").strip() for row in rows if row[:1] != b"\0")


class EpisodeCounters:
    """What the interface counts over an episode from the messages and stats it sees."""

    def __init__(self) -> None:
        self.reset({})

    def reset(self, view: Mapping[str, Any]) -> None:
        """Zero the episode counters; the depth and experience-level
        maxima start at the view's values (1 when absent)."""
        self.values = {name: 0 for name in COUNTER_FIELDS}
        self.values["max_depth"] = int(view.get("depth", 1))
        self.values["max_experience_level"] = int(view.get("experience_level", 1))

    def update(self, view: Mapping[str, Any], stepped: bool) -> None:
        """Count an agent action (``stepped``), the kills, sales and altar tests the message
        reports, and new depth and level maxima (ignoring a game-over screen's zeros)."""
        v = self.values
        if stepped:
            v["episode_steps"] += 1
        message = view["message"]
        if message:
            v["kills"] += len(_KILL.findall(message))
            v["items_sold"] += len(_SOLD.findall(message))
            v["altar_tests"] += len(_ALTAR_TEST.findall(message))
        if view["max_hitpoints"] > 0:  # a finished game shows zeros
            v["max_depth"] = max(v["max_depth"], view["depth"])
            v["max_experience_level"] = max(v["max_experience_level"], view["experience_level"])


def game_view(message: np.ndarray, blstats: np.ndarray, glyphs: np.ndarray,
              inv_strs: np.ndarray, ground: GroundMemory | None = None) -> dict[str, Any]:
    """The game part of ``obs`` (no skill or episode fields) from NLE arrays; ``ground`` (updated
    here) knows what lies under the agent, else nothing is taken to."""
    from llmexplore.envs.nethack.text import decode_message

    stats = [int(v) for v in np.asarray(blstats).tolist()]
    view: dict[str, Any] = dict(zip(BLSTAT_NAMES, stats))
    view["message"] = decode_message(message)
    view["branch"] = BRANCHES.get(view["dungeon_number"], "other")
    glyphs = np.asarray(glyphs)
    x, y, r = view["x"], view["y"], NEARBY_RADIUS
    under = ground.update(glyphs, blstats) if ground is not None else -1
    view["here"] = FEATURE_NAMES[under] if under >= 0 else ""
    view["features"] = feature_counts(glyphs, (y, x), under)
    top, left = max(y - r, 0), max(x - r, 0)
    view["nearby"] = feature_counts(glyphs[top:y + r + 1, left:x + r + 1], (y - top, x - left), under)
    items = inventory(inv_strs)
    view["inventory"] = items
    view["num_items"] = len(items)
    return view


def example_obs(**overrides: Any) -> dict[str, Any]:
    """A complete ``obs`` of a plausible game state (start of a game on level 1), with overrides;
    nested dicts (``features``, ``nearby``, ``skill_start``) are updated key by key. Used as
    probe input for generated code and as scripted states in tests."""
    stats = (40, 10, 16, 16, 14, 15, 10, 10, 10, 0, 14, 14, 1, 0, 2, 2, 6, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0)
    obs: dict[str, Any] = dict(zip(BLSTAT_NAMES, stats))
    obs.update(message="", here="", branch="main", num_items=2, skill="discoverer", skill_turns=0, skill_steps=0,
               available=(), rng=0.5,
               inventory=("a +1 long sword (weapon in hand)", "an uncursed food ration"))
    obs["features"] = {name: 0 for name in FEATURE_NAMES}
    obs["nearby"] = {name: 0 for name in FEATURE_NAMES}
    obs["skill_start"] = {name: obs[name] for name in SKILL_START_FIELDS}
    obs.update({name: 0 for name in COUNTER_FIELDS})
    obs["max_depth"] = obs["max_experience_level"] = 1
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(obs.get(key), dict):
            unknown = set(value) - set(obs[key])
            if unknown:
                raise KeyError(f"{key} has no fields {sorted(unknown)}")
            obs[key] = {**obs[key], **value}
        elif key not in obs:
            raise KeyError(f"obs has no field {key!r}")
        else:
            obs[key] = value
    obs["branch"] = overrides.get("branch", BRANCHES.get(obs["dungeon_number"], "other"))
    return obs


def probe_observations() -> list[dict[str, Any]]:
    """Varied states every generated function must handle without failing (a smoke test, not a
    correctness test): the start of a game, an altar and a shop in view, deep levels, the Mines,
    an empty inventory, a long-running skill and a game-over screen."""
    return [
        example_obs(),
        example_obs(message="There is a staircase down here.", features={"stairs_down": 1},
                    nearby={"stairs_down": 1}),
        example_obs(features={"altar": 1}, nearby={"altar": 1}, skill="worshipper", skill_turns=40),
        example_obs(features={"altar": 1}, nearby={"altar": 1}, here="altar", skill="worshipper",
                    message="There is an altar to Anhur (chaotic) here; 2 other objects."),
        example_obs(features={"shopkeeper": 1, "objects": 30}, nearby={"shopkeeper": 1}, skill="merchant",
                    message="Hello Agent! Welcome to Asidonhopo's general store!"),
        example_obs(depth=3, level_number=3, skill="descender", skill_start={"depth": 2}, skill_turns=120,
                    max_depth=3, time=900),
        example_obs(depth=4, dungeon_number=2, level_number=2, skill="ascender", skill_start={"depth": 5},
                    features={"stairs_up": 1, "monsters": 4}, max_depth=5, time=2500),
        example_obs(inventory=(), num_items=0, gold=120, kills=12, experience_level=5,
                    max_experience_level=5),
        example_obs(skill="", skill_turns=0, available=("discoverer", "descender"), rng=0.05),
        example_obs(skill="discoverer", skill_turns=900, skill_steps=700, rng=0.95,
                    available=("discoverer", "descender", "ascender")),
        example_obs(hitpoints=0, max_hitpoints=0, message="You die...", skill_turns=3),
    ]
