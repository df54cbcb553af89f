"""Housekeep as a gymnasium env: one published episode per reset, symbolic observations.

Observation (every key an int16 array of fixed size, so one space serves every scene):

* ``room`` (1): index of the current room in the house (0-based).
* ``rooms`` (MAX_ROOMS): room-type id of each room of the house, 0 past the last room.
  The house plan is known; what lies where is not, until the agent goes there.
* ``receptacles`` (MAX_RECEPTACLES): category id of each receptacle of the current room,
  in slot order (the order ``go to receptacle k`` uses), 0 past the last.
* ``at`` (1): slot + 1 of the receptacle the agent stands at, 0 for none.
* ``objects`` (MAX_OBJECTS): category id of each of the episode's objects that the agent
  can see (lying in this room, or carried), 0 otherwise. Slots are shuffled per episode.
* ``object_on`` (MAX_OBJECTS): slot + 1 of the receptacle a visible object lies on, 0 otherwise.
* ``held`` (1): slot + 1 of the carried object, 0 for none.

Together they are everything the caption says, so text is rebuilt from stored observations.
Episodes: each reset draws a scene (uniformly) and one of its published episodes (uniformly);
the agent starts in the room nearest its published start position. An episode ends when
every object lies on a correct receptacle with empty hands (terminated) or after
``max_steps`` actions (truncated).
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

import gymnasium as gym
import numpy as np

from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.envs.housekeep import text
from llmexplore.envs.housekeep.data import SceneData
from llmexplore.envs.housekeep.vocab import (
    MAX_OBJECTS,
    MAX_RECEPTACLES,
    MAX_ROOMS,
    OBJECT_ID_HIGH,
    RECEPTACLE_ID_HIGH,
    ROOM_ID_HIGH,
    Vocabulary,
)
from llmexplore.envs.housekeep.world import NUM_ACTIONS, Rearrangement, action_names
from llmexplore.errors import ConfigError, shown

#: actions per episode: about 3x what the oracle policy needs on the hardest published
#: episode of the shared scenes (12 to 34 actions, median 21), so exploring is affordable
#: but a random walk rarely finishes (Housekeep allows 1000 low-level steps, ~3x the median
#: oracle step count its episode files record)
DEFAULT_MAX_STEPS = 100
Goals = Literal["annotations", "published"]


def observation_space() -> gym.spaces.Dict:
    """The int16 dict space every scene shares; keys and bounds as the module docstring lists them."""
    def box(high: int, size: int) -> gym.spaces.Box:
        return gym.spaces.Box(0, high, (size,), np.int16)

    return gym.spaces.Dict({
        "room": box(MAX_ROOMS - 1, 1),
        "rooms": box(ROOM_ID_HIGH, MAX_ROOMS),
        "receptacles": box(RECEPTACLE_ID_HIGH, MAX_RECEPTACLES),
        "at": box(MAX_RECEPTACLES, 1),
        "objects": box(OBJECT_ID_HIGH, MAX_OBJECTS),
        "object_on": box(MAX_RECEPTACLES, MAX_OBJECTS),
        "held": box(MAX_OBJECTS, 1),
    })


class HousekeepEnv(gym.Env):
    """The rearrangement task over the episodes of one or more scenes.

    ``reward=False`` is the reward-free task: the agent gets 0 while the episode stats still
    record Housekeep's reward. ``goals`` picks the correct placements: ``annotations``
    (default; the human judgements, >= 6 of 10 annotators) or ``published`` (the episode
    file's end_matrix, which Housekeep's own success metric reads; it differs from the
    annotations in a few receptacle-matching details, see docs/housekeep.md).
    ``episodes`` restricts a scene to some episode indices (e.g. one fixed episode);
    ``reset(options={"scene": s, "episode": i})`` plays a chosen one.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, scenes: Sequence[SceneData], vocab: Vocabulary, *, reward: bool = True,
                 max_steps: int = DEFAULT_MAX_STEPS, goals: Goals = "annotations",
                 episodes: Sequence[int] | None = None):
        if not scenes:
            raise ConfigError("HousekeepEnv needs at least one scene")
        if goals not in ("annotations", "published"):
            raise ConfigError(f"unknown Housekeep goals {shown(goals)}", hint="use 'annotations' or 'published'")
        if max_steps < 1:
            raise ConfigError(f"max_steps must be positive, not {max_steps}")
        self.scenes = list(scenes)
        self.vocab = vocab
        self.reward_enabled = reward
        self.max_steps = int(max_steps)
        self.goals = goals
        self._pool = [list(range(len(s.episodes))) if episodes is None else list(episodes) for s in self.scenes]
        for scene, pool in zip(self.scenes, self._pool):
            bad = [i for i in pool if not 0 <= i < len(scene.episodes)]
            if bad or not pool:
                raise ConfigError(f"episode indices {bad or '[]'} do not exist in scene {scene.scene} "
                                  f"({len(scene.episodes)} episodes)")
        self.observation_space = observation_space()
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.action_names = action_names()
        self._rng = np.random.default_rng()
        self.world: Rearrangement | None = None
        self.scene: SceneData | None = None

    # -- episodes -----------------------------------------------------------------------------
    def seed_episodes(self, seed: int) -> None:
        """Make the next and all later episodes reproducible without resetting now."""
        self._rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x484B]))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Draw a scene and one of its allowed episodes (or play ``options``' scene and episode,
        any index), shuffle the object slots and start in the room nearest the published start."""
        super().reset(seed=seed)
        if seed is not None:
            self.seed_episodes(seed)
        if options and "episode" in options:  # a chosen episode, for evaluation sweeps
            s, episode_index = int(options.get("scene", 0)), int(options["episode"])
            if not (0 <= s < len(self.scenes) and 0 <= episode_index < len(self.scenes[s].episodes)):
                raise ConfigError(f"no episode {episode_index} in scene #{s} of this env")
        else:
            s = int(self._rng.integers(len(self.scenes)))
            episode_index = int(self._pool[s][self._rng.integers(len(self._pool[s]))])
        self.scene = self.scenes[s]
        layout = self.scene.episodes[episode_index]
        goals = layout.correct if self.goals == "annotations" else layout.published_goal
        order = self._rng.permutation(layout.num_objects)
        self.world = Rearrangement(layout, goals, order, start_room=layout.start_room)
        self._steps = 0
        self._return = 0.0
        self._env_reward = 0.0
        self._counts = {"pick": 0, "place": 0, "failed": 0}
        self._seen = np.zeros(self.world.num_objects, dtype=bool)
        self._rooms_obs = np.zeros(MAX_ROOMS, dtype=np.int16)
        self._rooms_obs[: len(layout.room_type_ids)] = layout.room_type_ids
        self._room_receptacles = np.zeros((len(layout.room_names), MAX_RECEPTACLES), dtype=np.int16)
        for r, members in enumerate(layout.room_receptacles):
            self._room_receptacles[r, : len(members)] = layout.rec_category_ids[members]
        self._slot1 = (layout.rec_slot + 1).astype(np.int16)  # receptacle -> its slot + 1 in its room
        return self._observe(), {}

    def step(self, action):
        """Apply one action (reward 0 on the reward-free task). Info holds the event, a pick's or place's
        goal string under ``achieved``, and the episode stats on the last step. RuntimeError before reset."""
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        world = self.world
        outcome = world.step(int(action))
        self._steps += 1
        self._env_reward += outcome.reward
        reward = outcome.reward if self.reward_enabled else 0.0
        self._return += reward
        if outcome.event != "move":
            self._counts[outcome.event] += 1
        info: dict[str, Any] = {"event": outcome.event}
        if outcome.event in ("pick", "place"):
            info["achieved"] = self._achievement(outcome.event, outcome.obj, outcome.receptacle)
        terminated = world.solved()
        truncated = not terminated and self._steps >= self.max_steps
        obs = self._observe()
        if terminated or truncated:
            info[EPISODE_STATS_KEY] = self._episode_stats()
        return obs, float(reward), terminated, truncated, info

    def render(self) -> str:
        """The caption of the current state; "" before the first reset."""
        return text.caption(self._observe(), self.vocab) if self.world is not None else ""

    # -- observations ---------------------------------------------------------------------------
    def _observe(self) -> dict[str, np.ndarray]:
        world = self.world
        visible = world.object_room == world.room  # a carried object's room is -1
        self._seen |= visible
        n = world.num_objects
        objects = np.zeros(MAX_OBJECTS, dtype=np.int16)
        object_on = np.zeros(MAX_OBJECTS, dtype=np.int16)
        objects[:n] = np.where(visible, world.category_ids, 0)
        object_on[:n] = np.where(visible, self._slot1[world.location], 0)
        if world.held >= 0:
            objects[world.held] = world.category_ids[world.held]
        return {
            "room": np.array([world.room], dtype=np.int16),
            "rooms": self._rooms_obs.copy(),
            "receptacles": self._room_receptacles[world.room].copy(),
            "at": np.array([self._slot1[world.at] if world.at >= 0 else 0], dtype=np.int16),
            "objects": objects,
            "object_on": object_on,
            "held": np.array([world.held + 1], dtype=np.int16),
        }

    def _achievement(self, event: str, obj: int, receptacle: int) -> str:
        world = self.world
        name = self.vocab.object_name(int(world.category_ids[obj]))
        if event == "pick":
            return text.pick_goal(name)
        layout = world.layout
        return text.place_goal(name, layout.room_types[layout.rec_room[receptacle]], layout.rec_category[receptacle])

    # -- episode stats --------------------------------------------------------------------------
    def _episode_stats(self) -> dict[str, float]:
        world = self.world
        correct_now = world.correct_now()
        at_start = world.correct_at_start
        misplaced_start = ~at_start
        return {
            "return": float(self._return),
            "reward": float(self._env_reward),
            "length": int(self._steps),
            "rearrange_success": float(correct_now.mean()),
            "episode_success": int(world.solved()),
            "objects": int(world.num_objects),
            "misplaced_start": int(misplaced_start.sum()),
            "misplaced_end": int((~correct_now).sum()),
            "objects_fixed": int((misplaced_start & correct_now).sum()),
            "objects_displaced": int((at_start & ~correct_now).sum()),
            "misplaced_found": int((misplaced_start & self._seen).sum()),
            "rooms_visited": len(world.visited_rooms),
            "rooms": int(world.num_rooms),
            "picks": self._counts["pick"],
            "places": self._counts["place"],
            "failed_actions": self._counts["failed"],
            "eligible": int(world.eligible),
            "scene": int(self.scene.index),
            "episode_id": int(world.layout.episode_id),
        }
