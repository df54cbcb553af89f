"""NetHack adapter: NLE tasks as gymnasium dict-observation envs with episode stats."""

from __future__ import annotations

import importlib.metadata
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np
from nle import nethack
from nle.env.base import NLE_SPACE_ITEMS
from nle.env.tasks import TASK_ACTIONS

from llmexplore.envs.base import EPISODE_STATS_KEY, EnvAdapter, TaskSpec
from llmexplore.envs.nethack import practice, tasks, zero_shot
from llmexplore.envs.nethack.game_state import count_kills
from llmexplore.envs.nethack.progression import ProgressionTracker, load_table
from llmexplore.envs.nethack.text import decode_message, status_line
from llmexplore.errors import ConfigError

CROP = 9  # side of the square of map characters centred on the agent
_ROWS, _COLS = nethack.DUNGEON_SHAPE
_MAP_BLANK = ord(" ")

TASK_CLASSES: dict[str, type[tasks.NetHackScore]] = {
    "score": tasks.NetHackScore,
    "staircase": tasks.NetHackStaircase,
    "staircase-lvl3": tasks.NetHackStaircaseLvl3,
    "staircase-lvl4": tasks.NetHackStaircaseLvl4,
    "staircase-lvl3-continual": tasks.NetHackStaircaseLvl3Continual,
    "staircase-lvl4-continual": tasks.NetHackStaircaseLvl4Continual,
    "oracle": tasks.NetHackOracle,
    "oracle-sober": tasks.NetHackOracleSober,
    "maestro-score": zero_shot.NetHackInteractive,  # where MaestroMotif's skills train
    "maestro-practice": practice.NetHackPractice,  # maestro-score starting beside a shop or an altar
    **zero_shot.TASK_CLASSES,  # MaestroMotif's zero-shot evaluation tasks
}
ACTION_SETS = {
    "task": tuple(TASK_ACTIONS),
    "extended": tasks.EXTENDED_ACTIONS,
    "maestro": tasks.MAESTRO_ACTIONS,
}

#: NLE observation keys a caller may add with ``extra_keys`` (recording, visualising, datasets).
EXTRA_KEYS = ("tty_chars", "tty_colors", "tty_cursor", "glyphs", "chars", "inv_strs", "inv_letters")


def _observation_space(extra_keys: Sequence[str] = ()) -> gym.spaces.Dict:
    nle_spaces = dict(NLE_SPACE_ITEMS)
    spaces = {
        "message": gym.spaces.Box(0, 255, (256,), np.uint8),
        "blstats": gym.spaces.Box(-np.inf, np.inf, (nethack.BLSTATS_SHAPE[0],), np.float32),
        "crop": gym.spaces.Box(0, 255, (CROP, CROP), np.uint8),
    }
    for key in extra_keys:
        spaces[key] = nle_spaces[key]
    return gym.spaces.Dict(spaces)


def episode_seeds(seed: int, episode: int) -> tuple[int, int]:
    """NetHack's (core, disp) seeds of episode ``episode`` of a run seeded ``seed``: different for every
    episode, the same on a rerun (NetHack and MiniHack envs share this)."""
    core, disp = np.random.SeedSequence([seed, episode]).generate_state(2, np.uint64)
    return int(core) >> 1, int(disp) >> 1


class NetHackEnv(gym.Env):
    """One NLE task with our observation keys and BALROG-style episode stats.

    Episode stats: return, length, the last score and gold (gold carried when the episode
    ended), the deepest depth and level number, the highest experience level, BALROG
    progression, death, success (tasks with a goal) and ``kills``: how many times NetHack
    announced a kill by the player ("You kill ..." or "You destroy ..."), counted in every
    message of the episode, including those skipped behind "--More--" that the agent never
    sees. Kills by pets or traps are announced differently and are not counted.

    Seeding: ``reset(seed=s)`` makes this and every later episode reproducible; each
    episode gets NetHack seeds derived from (s, episode index), so episodes differ
    but a rerun with the same seed replays them. Without a seed NLE picks its own.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        task: str,
        actions: str = "task",
        max_episode_steps: int = 5000,
        extra_keys: Sequence[str] = (),
        progression_table: dict[str, float] | None = None,
    ):
        unknown = [k for k in extra_keys if k not in EXTRA_KEYS]
        if unknown:
            raise ConfigError(f"unknown NetHack observation keys {unknown}", hint=f"choose from {list(EXTRA_KEYS)}")
        self._extra_keys = tuple(extra_keys)
        nle_keys = tuple(dict.fromkeys(("message", "blstats", "chars") + self._extra_keys))
        self.nle = TASK_CLASSES[task](
            observation_keys=nle_keys, actions=ACTION_SETS[actions], max_episode_steps=max_episode_steps
        )
        self.observation_space = _observation_space(self._extra_keys)
        self.action_space = self.nle.action_space
        self.action_names = [nethack_action_name(a) for a in ACTION_SETS[actions]]
        self._progress = ProgressionTracker(progression_table if progression_table is not None else load_table())
        self._seed_base: int | None = None
        self._episode = 0
        self._last_raw: dict[str, np.ndarray] = {}

    def seed_episodes(self, seed: int) -> None:
        """Make the next and all later episodes reproducible without resetting now."""
        self._seed_base, self._episode = int(seed), 0

    # -- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Seed this episode's NetHack when seeded, reset NLE and the episode stats; returns our keys."""
        super().reset(seed=seed)
        if seed is not None:
            self.seed_episodes(seed)
        if self._seed_base is not None:
            self.nle.seed(*episode_seeds(self._seed_base, self._episode), reseed=False)
        self._episode += 1
        raw, info = self.nle.reset()
        blstats = raw["blstats"].tolist()
        self._new_episode_stats(raw, blstats)
        return self._obs(raw, blstats), info

    def step(self, action):
        """One step of the NLE task (reward unscaled); the last step's info carries the episode stats."""
        raw, reward, terminated, truncated, info = self.nle.step(int(action))
        blstats = raw["blstats"].tolist()  # one conversion for stats and crop: numpy scalars cost more
        self._update_stats(raw, blstats, reward)
        if terminated or truncated:
            info[EPISODE_STATS_KEY] = self._episode_stats(info)
        return self._obs(raw, blstats), reward, terminated, truncated, info

    def render(self) -> str:
        """The (21, 79) map characters as text lines; KeyError before the first reset."""
        return "\n".join(row.tobytes().decode("latin-1") for row in self._last_raw["chars"])

    def close(self) -> None:
        """Close the NLE game."""
        self.nle.close()

    # -- observations -------------------------------------------------------------------------
    def _obs(self, raw: Mapping[str, np.ndarray], blstats: list[int]) -> dict[str, np.ndarray]:
        self._last_raw = raw
        obs = {
            "message": raw["message"].copy(),  # NLE reuses its arrays between steps
            "blstats": raw["blstats"].astype(np.float32),
            "crop": crop_around(raw["chars"], blstats[nethack.NLE_BL_X], blstats[nethack.NLE_BL_Y]),
        }
        for key in self._extra_keys:
            obs[key] = raw[key].copy()
        return obs

    # -- episode stats ------------------------------------------------------------------------
    def _new_episode_stats(self, raw: Mapping[str, np.ndarray], blstats: list[int]) -> None:
        self._progress.reset()
        self._return = 0.0
        self._length = 0
        self._score = self._gold = self._kills = 0
        self._max_depth = self._max_dlvl = self._max_xl = 1
        self._update_stats(raw, blstats, 0.0, count_step=False)

    def _update_stats(self, raw: Mapping[str, np.ndarray], b: list[int], reward: float,
                      count_step: bool = True) -> None:
        if count_step:
            self._return += reward
            self._length += 1
            self._kills += count_kills(raw["message"].tobytes())
            for skipped in self.nle.more_messages:
                self._kills += count_kills(skipped)
        if b[nethack.NLE_BL_HPMAX] <= 0:  # after the game ended blstats read zero: keep the last real ones
            return
        depth, xl, dlvl = b[nethack.NLE_BL_DEPTH], b[nethack.NLE_BL_XP], b[nethack.NLE_BL_DLEVEL]
        self._score = b[nethack.NLE_BL_SCORE]
        self._gold = b[nethack.NLE_BL_GOLD]
        if depth > self._max_depth:
            self._max_depth = depth
        if dlvl > self._max_dlvl:
            self._max_dlvl = dlvl
        if xl > self._max_xl:
            self._max_xl = xl
        self._progress.update(depth, xl)

    def _episode_stats(self, info: Mapping[str, Any]) -> dict[str, float]:
        end_status = int(info.get("end_status", 0))
        stats = {
            "return": float(self._return),
            "length": int(self._length),
            "score": self._score,
            "gold": self._gold,
            "depth": self._max_depth,
            "level_number": self._max_dlvl,
            "experience_level": self._max_xl,
            "progression": self._progress.percent,
            "died": int(end_status == tasks.StepStatus.DEATH),
            "kills": self._kills,
        }
        if "success" in info:
            stats["success"] = int(bool(info["success"]))
        if "count" in info:  # the interaction tasks' published measure (zero_shot.py)
            stats["count"] = int(info["count"])
            stats["venue_seen"] = int(bool(info["venue_seen"]))
        return stats


def crop_around(chars: np.ndarray, x: int, y: int) -> np.ndarray:
    """The CROP x CROP characters centred on (x, y); blank beyond the map's edge."""
    half = CROP // 2
    top, left = y - half, x - half
    if top >= 0 and left >= 0 and top + CROP <= _ROWS and left + CROP <= _COLS:
        return chars[top : top + CROP, left : left + CROP].copy()
    out = np.full((CROP, CROP), _MAP_BLANK, dtype=np.uint8)
    r0, c0 = max(top, 0), max(left, 0)
    r1, c1 = min(top + CROP, _ROWS), min(left + CROP, _COLS)
    out[r0 - top : r1 - top, c0 - left : c1 - left] = chars[r0:r1, c0:c1]
    return out


#: NLE's enum of the shifted directions (NetHack's ``K``: go north until something interesting)
_FAR_DIRECTIONS = "CompassDirectionLonger"


def nethack_action_name(action: int) -> str:
    """An NLE action's name in lower case (``eat``, ``n``; ``far n`` for the shifted direction, which NLE
    names like the one-step one), or a plain int's number: unique within an action set, so a replay or a
    visualisation tells the two moves apart."""
    try:
        name = action.name.lower()  # type: ignore[attr-defined]
    except AttributeError:
        return str(int(action))
    return f"far {name}" if type(action).__name__ == _FAR_DIRECTIONS else name


class NetHackLanguage:
    """What an adapter of NetHack-language observations (NetHack, MiniHack) offers beside its env: the
    observation keys and the captions an LM sees, the message and the bottom line."""

    def observation_space(self) -> gym.spaces.Dict:
        """message (256,) uint8, blstats (27,) float32 and the (9, 9) uint8 map crop around the hero."""
        return _observation_space()

    def caption(self, obs: Mapping[str, np.ndarray]) -> str:
        """The decoded message line, the whole caption (Motif's and ONI's): no map, no status."""
        return decode_message(obs["message"])

    def environment_info(self) -> dict[str, Any]:
        """NLE's version: a new NLE can change the game, so tables never mix them."""
        return {"nle": importlib.metadata.version("nle")}

    def caption_with_status(self, obs: Mapping[str, np.ndarray]) -> str:
        """The message, then the status line in brackets: ``You see here a dagger. [Dlvl:1 $:0 HP:14(14) Xp:1]``."""
        return f"{decode_message(obs['message'])} [{status_line(obs['blstats'])}]"


class NetHackAdapter(NetHackLanguage, EnvAdapter):
    family = "nethack"
    metric = "progression"

    def make_env(self, seed: int | None = None, extra_keys: Sequence[str] = ()) -> NetHackEnv:
        """A NetHackEnv for the task's NLE class and action set, with the 5000-step limit."""
        opts = self.task.options
        env = NetHackEnv(opts["task"], actions=opts.get("actions", "task"), extra_keys=extra_keys)
        if seed is not None:
            env.seed_episodes(seed)
        return env

    def validate_data(self) -> None:
        """Load BALROG's progression table now, so a missing or broken one stops the run before training."""
        load_table()

    def summarize(self, episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Mean of each NetHack stat (progression, score, depth, kills and
        the rest) over the episodes that carry it, plus the episode count."""
        keys = ["return", "length", "score", "gold", "kills", "depth", "experience_level", "progression", "died",
                "success"]
        out: dict[str, float] = {"episodes": float(len(episodes))}
        for key in keys:
            values = [float(e[key]) for e in episodes if key in e]
            if values:
                out[key] = float(np.mean(values))
        return out
