"""ELLM on Housekeep: yes/no placement questions, "pick X" / "place X on R" goals, published rewards.

Per state the LM is asked, per (object, receptacle), whether the object belongs there
(``housekeep_placement``): empty-handed, every object in view whose receptacle gets a no
is a "pick X" goal; carrying X, every receptacle seen so far this episode that gets a yes
is a "place X on R" goal (``envs.housekeep.placements.suggest``). Rewards follow ELLM's
Housekeep code: +2.5 for a pick or place the previous state's goals suggested, -0.25 for
one they did not; a suggested pick of an object picked before in the episode earns 0;
after a suggested place the object gets no more goals (ELLM's novelty bonus). A failed
pick or place costs -0.2, the term ELLM's reward kept from Housekeep's. Success is the
env's own report (``info["achieved"]``, in the goals' words), so matching is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llmexplore.envs.housekeep import placements
from llmexplore.envs.housekeep.text import read_view
from llmexplore.envs.housekeep.vocab import Vocabulary
from llmexplore.envs.housekeep.world import PICK
from llmexplore.methods.ellm.asking import PlacementAnswers
from llmexplore.methods.ellm.embedding import SentenceEmbedder
from llmexplore.methods.ellm.wrapper import GoalRewardWrapper

PUBLISHED_REWARDS = {"suggested": 2.5, "unsuggested": -0.25, "failed": -0.2}


class HousekeepGoals(GoalRewardWrapper):
    def __init__(self, env, embedder: SentenceEmbedder, answers: PlacementAnswers, vocab: Vocabulary,
                 rewards: dict[str, float] | None = None, novelty: bool = True, goal_conditioning: bool = True):
        super().__init__(env, embedder, goal_conditioning)
        self.answers = answers
        self.vocab = vocab
        self.rewards = {**PUBLISHED_REWARDS, **(rewards or {})}
        self.novelty = novelty
        self.known: dict[tuple[str, str], None] = {}  # (room type, receptacle) seen this episode, in order
        self.placed: set[str] = set()  # objects placed as suggested: no more goals for them
        self.picked: set[int] = set()  # object slots picked up at least once
        self._suggestions: dict[str, placements.Suggestion] = {}

    def start_episode(self, obs: dict[str, np.ndarray]) -> None:
        """Forget the receptacles seen, the objects placed and the slots picked in the last episode."""
        self.known, self.placed, self.picked = {}, set(), set()

    def suggest(self, obs: dict[str, np.ndarray]) -> tuple[str, ...]:
        """Empty-handed, "pick X" for objects in view the LM calls misplaced; carrying
        X, "place X on R" for the receptacles seen this episode it endorses. Objects
        already placed get none; the new placement questions are asked in one batch."""
        view = read_view(obs, self.vocab)
        for pair in placements.receptacles_in_view(view):
            self.known.setdefault(pair, None)
        if view.held is not None:
            questions = [(view.held, receptacle, room) for room, receptacle in self.known]
        else:
            questions = [(p.obj, p.receptacle, view.room_type) for p in view.objects]
        self.answers.prefetch(questions)
        found = placements.suggest(view, self.answers, list(self.known), skip=tuple(self.placed))
        self._suggestions = {s.text: s for s in found}
        return tuple(self._suggestions)

    def transition_reward(self, action: Any, obs: dict[str, np.ndarray], info: dict[str, Any]) -> float:
        """The published reward of the step: ``suggested`` for a pick or place the previous
        state's goals named (0 for a repeat pick with ``novelty``), ``unsuggested`` for
        another one, ``failed`` for a failed pick or place, 0 otherwise."""
        event = info.get("event")
        if event == "failed":  # only a failed pick or place costs (a move to nowhere is free, as in the env)
            return self.rewards["failed"] if int(action) >= PICK else 0.0
        if event not in ("pick", "place"):
            return 0.0
        goal = info["achieved"]
        suggestion = self._suggestions.get(goal)  # the goals of the state this step started from
        if event == "pick":
            slot = int(np.asarray(obs["held"]).reshape(-1)[0]) - 1
            first = slot not in self.picked
            self.picked.add(slot)
            if suggestion is None:
                return self.rewards["unsuggested"]
            if self.novelty and not first:
                return 0.0
            self.count_achieved(1)
            return self.rewards["suggested"]
        if suggestion is None:
            return self.rewards["unsuggested"]
        if self.novelty:
            self.placed.add(suggestion.obj)
        self.count_achieved(1)
        return self.rewards["suggested"]
