"""ELLM on Crafter: LM goal suggestions from the state caption, rewarded by sentence similarity.

Per step: the caption of the state (the adapter's text view) goes to the LM's
``ellm_goals`` question; goals already achieved this episode are dropped. When an action
succeeds (see ``crafter_events``), its caption ("chop tree") is compared with the goals
suggested for the state the step started from; the reward is the best cosine similarity
above the threshold (0.99 published), and every goal above it counts as achieved (with
ELLM's equivalents: eat/attack cow, place/make crafting table), so it is neither suggested
nor rewarded again this episode (ELLM's novelty bonus; ``novelty=False`` turns it off).
Every step also earns ``health_coef`` times the change in health (ELLM's health term, 0 in
its released code; see ``ELLMOptions.health_coef``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llmexplore.envs.crafter.adapter import ACTIONS
from llmexplore.envs.crafter.text import INVENTORY, caption
from llmexplore.methods.ellm.asking import GoalSuggester
from llmexplore.methods.ellm.crafter_events import successful_actions, with_equivalents
from llmexplore.methods.ellm.embedding import SentenceEmbedder
from llmexplore.methods.ellm.wrapper import GoalRewardWrapper

_HEALTH = INVENTORY.index("health")


class CrafterGoals(GoalRewardWrapper):
    def __init__(self, env, embedder: SentenceEmbedder, suggester: GoalSuggester, threshold: float = 0.99,
                 novelty: bool = True, goal_conditioning: bool = True, health_coef: float = 0.0):
        super().__init__(env, embedder, goal_conditioning)
        self.health_coef = float(health_coef)
        self.suggester = suggester
        self.threshold = float(threshold)
        self.novelty = novelty
        self.achieved: set[str] = set()
        self._inventory = np.zeros(0)
        self._achievements: dict[str, int] = {}

    def start_episode(self, obs: dict[str, np.ndarray]) -> None:
        """Forget achieved goals and take the first observation's inventory; no achievement is unlocked yet."""
        self.achieved = set()
        self._inventory = np.array(obs["inventory"], copy=True)
        self._achievements = {}  # a new Crafter player has unlocked nothing

    def suggest(self, obs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """The LM's goals for the state's caption, minus goals achieved this episode (with ``novelty``)."""
        goals = self.suggester.goals(caption(obs))
        if self.novelty and self.achieved:
            goals = tuple(g for g in goals if g not in self.achieved)
        return goals

    def transition_reward(self, action: Any, obs: dict[str, np.ndarray], info: dict[str, Any]) -> float:
        """``health_coef`` times the health change, plus the best similarity of a succeeded action's
        caption to the previous state's goals when above ``threshold`` (else 0); with ``novelty``
        the matched goals and their equivalents are not suggested again this episode."""
        health = self.health_coef * float(obs["inventory"][_HEALTH] - self._inventory[_HEALTH])
        return health + self._goal_reward(action, obs, info)

    def _goal_reward(self, action: Any, obs: dict[str, np.ndarray], info: dict[str, Any]) -> float:
        after = info.get("achievements", self._achievements)
        done = successful_actions(ACTIONS[int(action)], self._inventory, self._achievements, after)
        self._inventory = np.array(obs["inventory"], copy=True)
        self._achievements = dict(after)
        if not done or not self.goals:
            return 0.0
        similarity = self.embedder.similarity(done, list(self.goals))  # [actions, goals]
        best = similarity.max(axis=0)
        hits = {g for g, s in zip(self.goals, best) if s > self.threshold}
        if not hits:
            return 0.0
        if self.novelty:
            self.achieved |= with_equivalents(hits)
        self.count_achieved(len(hits))
        return float(best.max())
