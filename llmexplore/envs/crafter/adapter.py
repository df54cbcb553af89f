"""Crafter adapter: crafter.Env as a gymnasium dict-observation env with Crafter's stats."""

from __future__ import annotations

import importlib.metadata
import os
from typing import Any, Mapping, Sequence

import crafter
from crafter import objects as crafter_objects
import gymnasium as gym
import numpy as np

from llmexplore.envs.base import EPISODE_STATS_KEY, EnvAdapter
from llmexplore.envs.crafter import stats as crafter_stats
from llmexplore.envs.crafter import text, worldgen
from llmexplore.envs.crafter.render import FastItemView, FastLocalView, FastSemanticView
from llmexplore.errors import ConfigError, shown

VIEW_W, VIEW_H = 9, 7  # cells of the world the agent sees (Crafter's 9x9 view minus 2 item rows)
ACTIONS = tuple(crafter.constants.actions)
EXTRA_KEYS = ("semantic",)
#: environment variable choosing how Crafter is simulated (see docs/crafter.md)
RENDER_ENV = "LLMEXPLORE_CRAFTER_RENDER"
RENDER_PATHS = ("accelerated", "reference")


def render_path() -> str:
    """The Crafter path this process uses: ``accelerated`` (default) or Crafter's own ``reference`` code."""
    value = os.environ.get(RENDER_ENV, "").strip() or RENDER_PATHS[0]
    if value not in RENDER_PATHS:
        raise ConfigError(f"unknown {RENDER_ENV}={shown(value)}",
                          hint=f"set it to one of {list(RENDER_PATHS)} or leave it unset (accelerated)")
    return value


def _observation_space(extra_keys: Sequence[str] = ()) -> gym.spaces.Dict:
    spaces = {
        "image": gym.spaces.Box(0, 255, (64, 64, 3), np.uint8),
        "inventory": gym.spaces.Box(0, np.inf, (len(text.INVENTORY),), np.float32),
        "local_semantic": gym.spaces.Box(0, len(text.SEMANTIC_NAMES) - 1, (VIEW_W, VIEW_H), np.uint8),
        "facing": gym.spaces.Box(0, len(text.SEMANTIC_NAMES) - 1, (1,), np.uint8),
    }
    if "semantic" in extra_keys:
        spaces["semantic"] = gym.spaces.Box(0, len(text.SEMANTIC_NAMES) - 1, (64, 64), np.uint8)
    return gym.spaces.Dict(spaces)


class _ReproducibleCrafter(crafter.Env):
    """crafter.Env whose creature balancing does not depend on memory addresses.

    Crafter keeps each chunk's objects in a ``set`` and despawns a creature picked by
    index from it, so the choice follows object ids and two envs with one seed drift
    apart. Ordering the chunk's objects by position before balancing makes a seed replay
    exactly; which creature goes is still uniformly random, so dynamics are unchanged.
    """

    def _balance_object(self, chunk, objs, *args, **kwargs):
        ordered = sorted(objs, key=lambda o: (int(o.pos[0]), int(o.pos[1]), type(o).__name__))
        return super()._balance_object(chunk, ordered, *args, **kwargs)


class _AcceleratedCrafter(_ReproducibleCrafter):
    """_ReproducibleCrafter with cached-cell rendering and grid world generation: same worlds, same pixels.

    The game itself (objects and their updates, balancing) is Crafter's; what differs is
    how views are drawn, how the world is computed, and the distance test in ``step``.
    tests/unit/test_crafter_accelerated.py checks every observation, reward and info
    against the reference path.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._local_view = FastLocalView(self._world, self._textures, self._local_view._grid)
        self._item_view = FastItemView(self._textures, self._item_view._grid)
        self._sem_view = FastSemanticView(self._world, list(self._sem_view._obj_ids))
        self._update_reach = 2 * max(int(v) for v in self._view)

    def reset(self):
        # crafter.Env.reset (1.8.3) line for line, with our generate_world
        center = (self._world.area[0] // 2, self._world.area[1] // 2)
        self._episode += 1
        self._step = 0
        self._world.reset(seed=hash((self._seed, self._episode)) % (2 ** 31 - 1))
        self._update_time()
        self._player = crafter_objects.Player(self._world, center)
        self._last_health = self._player.health
        self._world.add(self._player)
        self._unlocked = set()
        worldgen.generate_world(self._world, self._player)
        return self._obs()

    def step(self, action):
        # crafter.Env.step (1.8.3) line for line, except that the distance from the player,
        # np.abs(obj.pos - player.pos).sum(), is taken on Python ints (the same integer)
        self._step += 1
        self._update_time()
        player = self._player
        player.action = crafter.constants.actions[action]
        for obj in self._world.objects:
            (px, py), (ox, oy) = player.pos.tolist(), obj.pos.tolist()
            if abs(ox - px) + abs(oy - py) < self._update_reach:
                obj.update()
        if self._step % 10 == 0:
            for chunk, objs in self._world.chunks.items():
                self._balance_chunk(chunk, objs)
        obs = self._obs()
        reward = (player.health - self._last_health) / 10
        self._last_health = player.health
        unlocked = {
            name for name, count in player.achievements.items() if count > 0 and name not in self._unlocked}
        if unlocked:
            self._unlocked |= unlocked
            reward += 1.0
        dead = player.health <= 0
        over = self._length and self._step >= self._length
        done = dead or over
        info = {
            "inventory": player.inventory.copy(),
            "achievements": player.achievements.copy(),
            "discount": 1 - float(dead),
            "semantic": self._sem_view(),
            "player_pos": player.pos,
            "reward": reward,
        }
        if not self._reward:
            reward = 0.0
        return obs, reward, done, info


def make_crafter(render: str | None = None, **kwargs) -> crafter.Env:
    """A seedable crafter.Env on the chosen path (default: ``render_path()``)."""
    render = render_path() if render is None else render
    if render not in RENDER_PATHS:
        raise ConfigError(f"unknown Crafter render path {shown(render)}", hint=f"choose from {list(RENDER_PATHS)}")
    return (_AcceleratedCrafter if render == "accelerated" else _ReproducibleCrafter)(**kwargs)


class CrafterEnv(gym.Env):
    """Crafter with image, inventory, the local semantic view and the facing cell.

    ``reward=False`` is the reward-free task: the agent's reward is 0, while the episode
    stats still record Crafter's own reward (as Crafter's recorder does), so runs remain
    comparable with the published ones. Seeding follows Crafter: a world seed per env,
    and one world per (seed, episode); a seed replays exactly (see _ReproducibleCrafter).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, reward: bool = True, length: int = 10000, extra_keys: Sequence[str] = (),
                 render: str | None = None):
        unknown = [k for k in extra_keys if k not in EXTRA_KEYS]
        if unknown:
            raise ConfigError(f"unknown Crafter observation keys {unknown}", hint=f"choose from {list(EXTRA_KEYS)}")
        self.crafter = make_crafter(render, reward=reward, length=length)
        self._extra_keys = tuple(extra_keys)
        self.observation_space = _observation_space(extra_keys)
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.action_names = list(ACTIONS)
        self._padded = np.zeros((64 + VIEW_W, 64 + VIEW_H), dtype=np.uint8)
        self._last_image: np.ndarray | None = None

    def seed_episodes(self, seed: int) -> None:
        """Make the next and later episodes' worlds reproducible without resetting now."""
        self.crafter._seed = int(seed)
        self.crafter._episode = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """The next world of this env's (seed, episode) sequence; ``seed`` restarts
        the sequence from it, as ``seed_episodes`` does. The info dict is empty."""
        super().reset(seed=seed)
        if seed is not None:
            self.seed_episodes(seed)
        image = self.crafter.reset()
        self._length = 0
        self._return = 0.0
        self._true_reward = 0.0
        player = self.crafter._player
        info = {
            "inventory": player.inventory.copy(),
            "achievements": player.achievements.copy(),
            "semantic": self.crafter._sem_view(),
            "player_pos": player.pos,
        }
        return self._obs(image, info), {}

    def step(self, action):
        """One Crafter step: terminated on death, truncated at the length limit. The last step's info
        holds the episode stats, whose ``reward`` is Crafter's own even on the reward-free task."""
        image, reward, done, info = self.crafter.step(int(action))
        self._length += 1
        self._return += reward
        self._true_reward += info["reward"]
        terminated = bool(info["discount"] == 0.0)
        truncated = bool(done and not terminated)
        obs = self._obs(image, info)
        out_info: dict[str, Any] = {"achievements": info["achievements"], "inventory": info["inventory"]}
        if done:
            row = crafter_stats.crafter_row(self._length, self._true_reward, info["achievements"])
            row["return"] = float(self._return)
            row["achievements_unlocked"] = int(sum(v > 0 for v in info["achievements"].values()))
            out_info[EPISODE_STATS_KEY] = row
        return obs, float(reward), terminated, truncated, out_info

    def render(self) -> np.ndarray:
        """The last observation's (64, 64, 3) uint8 image; None before the first reset."""
        return self._last_image

    def _obs(self, image: np.ndarray, info: Mapping[str, Any]) -> dict[str, np.ndarray]:
        self._last_image = image
        semantic = info["semantic"]
        px, py = (int(v) for v in info["player_pos"])
        hw, hh = VIEW_W // 2, VIEW_H // 2
        self._padded[hw : hw + 64, hh : hh + 64] = semantic
        local = self._padded[px : px + VIEW_W, py : py + VIEW_H].copy()
        fx, fy = (int(v) for v in self.crafter._player.facing)
        tx, ty = px + fx, py + fy
        facing = semantic[tx, ty] if 0 <= tx < 64 and 0 <= ty < 64 else 0
        inventory = info["inventory"]
        obs = {
            "image": image,
            "inventory": np.array([inventory[k] for k in text.INVENTORY], dtype=np.float32),
            "local_semantic": local,
            "facing": np.array([facing], dtype=np.uint8),
        }
        if "semantic" in self._extra_keys:
            obs["semantic"] = semantic.astype(np.uint8)
        return obs


class CrafterAdapter(EnvAdapter):
    family = "crafter"
    metric = "score"

    final_window = None  # Crafter's protocol: success rates over all training episodes

    def episodes_in_budget(self, episodes, budget):
        """Crafter's analysis counts steps as the running sum of episode lengths; so do we,
        so that Crafter's own scripts on our stats.jsonl give the score in our record."""
        return crafter_stats.within_budget_by_length(episodes, budget)

    def environment_info(self) -> dict[str, Any]:
        """Crafter's version and which path simulated it (``LLMEXPLORE_CRAFTER_RENDER``)."""
        return {"crafter": importlib.metadata.version("crafter"), "crafter_render": render_path()}

    def make_env(self, seed: int | None = None, extra_keys: Sequence[str] = ()) -> CrafterEnv:
        """A CrafterEnv on this process's render path, reward-free
        when the task is; ``semantic`` is the only extra key."""
        env = CrafterEnv(reward=not self.task.reward_free, extra_keys=extra_keys)
        if seed is not None:
            env.seed_episodes(seed)
        return env

    def observation_space(self) -> gym.spaces.Dict:
        """image (64, 64, 3) uint8, inventory (16,) float32 counts, and uint8
        semantic ids: local_semantic (9, 7) around the player, facing (1,)."""
        return _observation_space()

    def caption(self, obs: Mapping[str, np.ndarray]) -> str:
        """ELLM's caption of what is in view, faced, held and felt (``text.caption``); no image needed."""
        return text.caption(obs)

    def summarize(self, episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Crafter score and success rates over all given episodes (one seed), plus means."""
        out: dict[str, float] = {"episodes": float(len(episodes))}
        if not episodes:
            return out
        score, rates = crafter_stats.run_score(episodes)
        out["score"] = score
        for name, rate in zip(crafter_stats.ACHIEVEMENTS, rates):
            out[f"success_{name}"] = float(rate)
        for key in ("return", "reward", "length", "achievements_unlocked"):
            values = [float(e[key]) for e in episodes if key in e]
            if values:
                out[key] = float(np.mean(values))
        return out
