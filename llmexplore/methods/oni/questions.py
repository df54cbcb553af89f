"""ONI-Retrieval's and ONI-Classification's question: is one NetHack message extremely helpful under a goal?

Registered as the kind ``oni_classification`` when imported; its prompts are ``<prompts>/oni_classification/``.
A family's own kind for it (``EnvFamily.message_text``; Crafter's ``crafter_helpfulness``) is registered too.
ONI-Ranking asks Motif's question (``methods/motif/questions.py``).
"""

from __future__ import annotations

from llmexplore.errors import ConfigError, shown
from llmexplore.lm.parsing import DeclaredAnswer, Parsed
from llmexplore.lm.questions import Question, register_question_kind
from llmexplore.lm.templates import PromptLibrary
from llmexplore.methods.message_text import register_family_kinds


@register_question_kind
class OniClassification(Question):
    """Is one NetHack message extremely helpful (1) or not (0) under a goal? ONI-Retrieval and -Classification.

    As in ONI, only extremely helpful messages are positive; the goal (``defaultgoal``,
    ``combat``, ``gold``) comes from ``oni_classification/goals.yaml``.
    """

    kind = "oni_classification"
    answer_format = "Verdict: helpful or Verdict: unhelpful"
    ANSWER = DeclaredAnswer("Verdict", {"helpful": 1, "unhelpful": 0, "not helpful": 0}, answer_format)
    score_lead = "Verdict:"
    score_options = {" helpful": 1, " unhelpful": 0}

    def __init__(self, goal: str = "defaultgoal", version: str = "default",
                 prompts: PromptLibrary | str | None = None):
        super().__init__(version, prompts)
        goals = self.prompts.table(self.kind, "goals")
        if goal not in goals:
            raise ConfigError(f"unknown ONI classification goal {shown(goal)}", hint=f"goals: {', '.join(goals)}")
        self.goal = goal
        self.goal_instruction = goals[goal]

    def fields(self, item: str) -> dict[str, str]:
        """The template's goal instruction and the message (the item, a caption)."""
        return {"goal_instruction": self.goal_instruction, "message": item}

    def describe(self) -> str:
        """Kind, prompt version and goal, e.g. ``oni_classification/default goal=defaultgoal``."""
        return f"{self.kind}/{self.version} goal={self.goal}"

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """1 for a declared ``Verdict: helpful``, 0 for ``unhelpful`` or ``not helpful``;
        a failure when the reply declares no valid verdict or conflicting ones."""
        return self.ANSWER.parse(text, prompt)


register_family_kinds(OniClassification)  # e.g. Crafter's ``crafter_helpfulness`` (``EnvFamily.message_text``)
