"""Housekeep adapter: tasks over one scene or a split's scenes, with the rearrangement metric."""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from llmexplore.envs.base import EnvAdapter
from llmexplore.envs.housekeep import annotations, data, scenes, text
from llmexplore.envs.housekeep.env import DEFAULT_MAX_STEPS, HousekeepEnv, observation_space
from llmexplore.envs.housekeep.placements import PlacementJudge
from llmexplore.errors import ConfigError, DataError

#: episode stats averaged by ``summarize`` (the metric first)
SUMMARY_KEYS = (
    "rearrange_success", "episode_success", "objects_fixed", "objects_displaced", "misplaced_end",
    "misplaced_found", "rooms_visited", "picks", "places", "failed_actions", "length", "return", "reward",
)
_warned: set[str] = set()


class HousekeepAdapter(EnvAdapter):
    family = "housekeep"
    metric = "rearrange_success"

    def scene_ids(self) -> tuple[str, ...]:
        """The iGibson scenes this task draws episodes from.

        A split task uses the split's scenes whose episode files are present (the shared
        copy of the data holds 9 of the 14), and says so once when some are missing.
        """
        opts = self.task.options
        if "scenes" in opts:
            return tuple(opts["scenes"])
        split = opts.get("split")
        if split not in scenes.SPLITS:
            raise ConfigError(f"task {self.task.name} names neither scenes nor a split")
        root = annotations.housekeep_root()
        wanted = scenes.scenes_of_split(split)
        present = tuple(s for s in wanted if data.scene_path(s, root).exists())
        if not present:
            raise DataError(f"no episode file of the {split} split is present under {root / 'episodes' / split}",
                            hint=annotations.SOURCE_HINT)
        if len(present) < len(wanted) and self.task.name not in _warned:
            _warned.add(self.task.name)
            missing = [s for s in wanted if s not in present]
            warnings.warn(f"{self.task.name}: episode files of {missing} are missing; sampling from {list(present)}",
                          stacklevel=2)
        return present

    def load_scenes(self) -> list[data.SceneData]:
        """The task's scenes, parsed and checked against the
        annotations (cached per process; DataError on a bad file)."""
        return [data.load_scene(s) for s in self.scene_ids()]

    @property
    def vocab(self):
        """The category ids, read from the annotation file (cached; the same for every scene and process)."""
        return annotations.load_annotations().vocabulary

    def validate_data(self) -> None:
        """Parse and check the annotations and every episode file the task uses."""
        self.load_scenes()

    def make_env(self, seed: int | None = None, extra_keys: Sequence[str] = ()) -> HousekeepEnv:
        """A HousekeepEnv over the task's scenes with its ``max_steps`` and ``goals``
        options; Housekeep has no extra keys, so asking for one is a ConfigError."""
        if extra_keys:
            raise ConfigError(f"Housekeep has no optional observation keys (asked for {list(extra_keys)})")
        opts = self.task.options
        env = HousekeepEnv(self.load_scenes(), self.vocab, reward=not self.task.reward_free,
                           max_steps=int(opts.get("max_steps", DEFAULT_MAX_STEPS)),
                           goals=opts.get("goals", "annotations"))
        if seed is not None:
            env.seed_episodes(seed)
        return env

    def observation_space(self) -> gym.spaces.Dict:
        """The fixed int16 symbolic space (``env.observation_space``), the same for every scene."""
        return observation_space()

    def caption(self, obs: Mapping[str, np.ndarray]) -> str:
        """The observation as sentences: the room, the receptacle the agent is
        at, the room's receptacles with what lies on them, what it holds."""
        return text.caption(obs, self.vocab)

    def view(self, obs: Mapping[str, np.ndarray]) -> text.View:
        """The observation in names (what ``suggest`` takes)."""
        return text.read_view(obs, self.vocab)

    def judge(self, noise: float = 0.0, seed: int = 0) -> PlacementJudge:
        """Yes/no placement answers from the annotations (see ``placements``)."""
        return PlacementJudge(annotations.load_annotations(), noise=noise, seed=seed)

    def summarize(self, episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Mean of each ``SUMMARY_KEYS`` stat over the episodes that carry it, plus the episode count."""
        out: dict[str, float] = {"episodes": float(len(episodes))}
        for key in SUMMARY_KEYS:
            values = [float(e[key]) for e in episodes if key in e]
            if values:
                out[key] = float(np.mean(values))
        return out
