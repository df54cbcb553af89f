"""Motif's question (also ONI-Ranking's): which of two NetHack messages shows more progress under a goal.

Registered as the kind ``motif_preference`` when imported; its prompts are ``<prompts>/motif_preference/``.
A family whose text is asked about in its own words names its kind (``EnvFamily.message_text``; Crafter's
``crafter_preference``), registered here too.
The labels are those of the pair dataset (``dataset.py``).
"""

from __future__ import annotations

from typing import Any

from llmexplore.errors import ConfigError, shown
from llmexplore.lm.parsing import DeclaredAnswer, Parsed
from llmexplore.lm.questions import NO_SHORTCUT, Question, register_question_kind
from llmexplore.lm.templates import PromptLibrary
from llmexplore.methods.message_text import register_family_kinds
from llmexplore.methods.motif.dataset import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, LABEL_UNKNOWN

__all__ = ["LABEL_FIRST", "LABEL_SECOND", "LABEL_TIE", "LABEL_UNKNOWN", "MotifPreference"]


@register_question_kind
class MotifPreference(Question):
    """Which of two NetHack messages shows more progress under a goal (Motif, ONI-Ranking).

    Item: (first caption, second caption). Labels: 0 first, 1 second, 2 tie, 3 unknown;
    identical captions are a tie without a call.
    """

    kind = "motif_preference"
    unknown = LABEL_UNKNOWN
    answer_format = "Preferred: 1, Preferred: 2 or Preferred: none"
    ANSWER = DeclaredAnswer("Preferred", {"1": LABEL_FIRST, "2": LABEL_SECOND, "none": LABEL_TIE,
                                          "message 1": LABEL_FIRST, "message 2": LABEL_SECOND},
                            answer_format)
    score_lead = "Preferred:"
    score_options = {" 1": LABEL_FIRST, " 2": LABEL_SECOND, " none": LABEL_TIE}
    neutral_item = ("N/A", "N/A")

    def __init__(self, goal: str = "defaultgoal", version: str = "default",
                 prompts: PromptLibrary | str | None = None):
        super().__init__(version, prompts)
        goals = self.prompts.table(self.kind, "goals")
        if goal not in goals:
            raise ConfigError(f"unknown Motif goal {shown(goal)}", hint=f"goals: {', '.join(goals)}")
        self.goal = goal
        self.goal_instruction = goals[goal]

    def fields(self, item: tuple[str, str]) -> dict[str, str]:
        """The template's goal instruction and the two captions of a (first, second) item."""
        first, second = item
        return {"goal_instruction": self.goal_instruction, "first": first, "second": second}

    def shortcut(self, item: tuple[str, str]) -> Any:
        """A tie (2) without asking when both captions are the same; else ``NO_SHORTCUT``."""
        return LABEL_TIE if item[0] == item[1] else NO_SHORTCUT

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """The declared ``Preferred:`` answer: 0 for message 1, 1 for message 2, 2 for
        none; a failure when the reply declares no valid answer or conflicting ones."""
        return self.ANSWER.parse(text, prompt)

    def describe(self) -> str:
        """Kind, prompt version and goal, e.g. ``motif_preference/default goal=defaultgoal``."""
        return f"{self.kind}/{self.version} goal={self.goal}"


register_family_kinds(MotifPreference)  # e.g. Crafter's ``crafter_preference`` (``EnvFamily.message_text``)
