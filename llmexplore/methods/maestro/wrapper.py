"""Call-and-return execution of skills inside the rollout workers.

``SkillWrapper`` keeps the active skill of one env. After every step it builds the
interface view (``interface.py``) and asks the active skill's termination function; when it
fires, the policy over skills picks the next skill among those whose initiation holds. The
observation gets the key ``skill`` (a one-hot vector of the skill that will act next), which
the policy network reads (``MaestroMotif.policy_keys``) and the learner uses to pick the
reward model of the skill that acted, and the key ``skill_started`` (1 on the observation with
which an activation begins, also when the policy picks the skill that just ended again), where
the learner ends the returns of the activation before it.

Per episode it reports steps, activations and terminations per skill, and how often
generated code failed (``maestro_*`` episode stats).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.envs.wrappers import EpisodicMessageCount
from llmexplore.methods.maestro.interface import SKILL_START_FIELDS, EpisodeCounters, GroundMemory, game_view
from llmexplore.methods.maestro.program import SkillProgram

SKILL_KEY = "skill"
SKILL_STARTED_KEY = "skill_started"


class SkillWrapper(gym.Wrapper):
    def __init__(self, env: gym.Env, program: SkillProgram, counts: EpisodicMessageCount | None = None,
                 count_scope: str = "episode", seed: int = 0):
        super().__init__(env)
        self.program = program
        self.skills = program.skills
        self.counts = counts
        self.count_scope = count_scope
        spaces = dict(env.observation_space.spaces)
        spaces[SKILL_KEY] = gym.spaces.Box(0.0, 1.0, (len(self.skills),), np.float32)
        spaces[SKILL_STARTED_KEY] = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self._onehot = np.eye(len(self.skills), dtype=np.float32)
        self.rng = np.random.default_rng([seed, 17])
        self.counters = EpisodeCounters()
        self.ground = GroundMemory()
        self.memory: dict[str, Any] = {}
        self.skill = self.skills[0]
        self._start: dict[str, int] = {}
        self._start_steps = 0
        self._stats: dict[str, float] = {}

    # -- gymnasium API ------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode: fresh policy memory and counters, and the first skill chosen among
        those whose initiation holds (the first skill if none); ``skill_started`` is 1."""
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self.rng = np.random.default_rng([seed, 17])
        self.memory = {}
        self.ground.reset()
        self._start, self._start_steps = {}, 0  # no skill yet: the first one starts below
        self._stats = {f"maestro_{what}_{s}": 0.0 for what in ("steps", "activations", "terminations")
                       for s in self.skills}
        self._errors_before = sum(self.program.errors.values())
        self._stats["maestro_no_skill_available"] = 0.0
        view = self._game(obs)
        self.counters.reset(view)
        self.counters.update(view, stepped=False)
        self._start_skill(self._with_skill(view), previous="")
        self._mark(obs, started=True)
        return obs, info

    def step(self, action):
        """Step, update the episode counters, and when the active skill terminates let the policy pick
        the next; writes ``skill`` and ``skill_started``, and the skill stats at an episode's end."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._stats[f"maestro_steps_{self.skill}"] += 1
        view = self._game(obs)
        self.counters.update(view, stepped=True)
        view = self._with_skill(view)
        started = False
        if terminated or truncated:
            stats = info.get(EPISODE_STATS_KEY)
            if stats is not None:
                stats.update(self._stats)
                stats["maestro_code_errors"] = float(sum(self.program.errors.values()) - self._errors_before)
        elif self.program.terminates(self.skill, view):
            self._stats[f"maestro_terminations_{self.skill}"] += 1
            self._start_skill(view, previous=self.skill)
            started = True
        self._mark(obs, started)
        return obs, reward, terminated, truncated, info

    # -- helpers --------------------------------------------------------------------------------------
    def _mark(self, obs: dict[str, np.ndarray], started: bool) -> None:
        obs[SKILL_KEY] = self._onehot[self.skills.index(self.skill)]
        obs[SKILL_STARTED_KEY] = np.array([1.0 if started else 0.0], np.float32)

    def _game(self, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return game_view(obs["message"], obs["blstats"], obs["glyphs"], obs["inv_strs"], self.ground)

    def _with_skill(self, view: dict[str, Any]) -> dict[str, Any]:
        view.update(self.counters.values)
        view["skill"] = self.skill
        view["skill_start"] = self._start or {k: view[k] for k in SKILL_START_FIELDS}
        view["skill_turns"] = view["time"] - self._start.get("time", view["time"])
        view["skill_steps"] = self.counters.values["episode_steps"] - self._start_steps
        return view

    def _start_skill(self, view: dict[str, Any], previous: str) -> None:
        available = self.program.available(view)
        if available:
            choice = dict(view, skill=previous, available=available, rng=float(self.rng.random()))
            self.skill = self.program.select(choice, self.memory)
        else:
            self.skill = self.skills[0]
            self._stats["maestro_no_skill_available"] += 1
        self._stats[f"maestro_activations_{self.skill}"] += 1
        self._start = {k: view[k] for k in SKILL_START_FIELDS}
        self._start_steps = self.counters.values["episode_steps"]
        if self.count_scope == "activation" and self.counts is not None:
            self.counts.reset_counts()
