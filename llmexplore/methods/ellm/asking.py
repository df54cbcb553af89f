"""ELLM's two questions to the language model, asked through the LM layer and remembered.

Every answer already lives in the LM layer's persistent cache (``make_lm``); the small
in-process tables here skip even the cache lookup, because a rollout worker asks the same
few questions again and again (a Crafter caption repeats while the agent stands still; a
Housekeep receptacle is judged again at every visit). A reply that cannot be read after
the LM layer's one retry counts as no suggestion (Crafter), or stays unknown (Housekeep:
``None``, kept out of the placement table so it gives neither a pick nor a place goal),
and is counted in ``failures``.
"""

from __future__ import annotations

from typing import Iterable

from llmexplore.envs.housekeep.vocab import display
from llmexplore.lm.base import LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import EllmGoals, HousekeepPlacement

#: entries kept per table before it is cleared (memory stays bounded in long runs)
MAX_MEMO = 200_000


class GoalSuggester:
    """Goals for a Crafter caption: the ``ellm_goals`` question, parsed from bullet lines."""

    def __init__(self, lm: LanguageModel, question: EllmGoals, params: SamplingParams):
        self.lm, self.question, self.params = lm, question, params
        self._memo: dict[str, tuple[str, ...]] = {}
        self.asked = 0
        self.failures = 0

    def goals(self, caption: str) -> tuple[str, ...]:
        """The LM's goals for a caption, asked once per caption and remembered; () when
        it suggests none or its reply stays unreadable (counted in ``failures``)."""
        found = self._memo.get(caption)
        if found is None:
            result = ask(self.lm, self.question, [caption], self.params)
            self.asked += 1
            label = result.labels[0]
            if label is None:
                self.failures += 1
            found = tuple(label or ())
            if len(self._memo) >= MAX_MEMO:
                self._memo.clear()
            self._memo[caption] = found
        return found


class PlacementAnswers:
    """Yes/no: does an object belong on a room's receptacle? The ``housekeep_placement`` question.

    Names may be given with underscores (annotation categories) or spaces; the LM sees
    spaces. Call ``prefetch`` with a state's questions to ask the new ones in one batch.
    An answer still unreadable after the LM layer's retry is ``None`` (unknown), counted
    once in ``failures`` and remembered apart from the placement table.
    """

    def __init__(self, lm: LanguageModel, question: HousekeepPlacement, params: SamplingParams):
        self.lm, self.question, self.params = lm, question, params
        self._memo: dict[tuple[str, str, str], bool] = {}
        self._unknown: set[tuple[str, str, str]] = set()
        self.asked = 0
        self.failures = 0

    @staticmethod
    def _key(obj: str, receptacle: str, room: str) -> tuple[str, str, str]:
        return display(obj), display(receptacle), display(room)

    def prefetch(self, questions: Iterable[tuple[str, str, str]]) -> None:
        """Ask, in one LM batch, the (object, receptacle, room) questions neither answered nor
        known unreadable yet; unreadable replies are remembered as unknown, not asked again."""
        todo = list(dict.fromkeys(k for k in (self._key(*q) for q in questions)
                                  if k not in self._memo and k not in self._unknown))
        if not todo:
            return
        result = ask(self.lm, self.question, todo, self.params)
        self.asked += len(todo)
        if len(self._memo) + len(todo) > MAX_MEMO:
            self._memo.clear()
        if len(self._unknown) > MAX_MEMO:
            self._unknown.clear()
        for key, label in zip(todo, result.labels):
            if label is None:
                self.failures += 1
                self._unknown.add(key)
            else:
                self._memo[key] = bool(label)

    def __call__(self, obj: str, receptacle: str, room: str) -> bool | None:
        """True (belongs there), False (does not), or None (the model's answer could not be read)."""
        key = self._key(obj, receptacle, room)
        if key not in self._memo and key not in self._unknown:
            self.prefetch([key])
        return self._memo.get(key)
