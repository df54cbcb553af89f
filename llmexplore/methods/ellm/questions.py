"""ELLM's questions, one per family it runs on: goal suggestions on Crafter, placements on Housekeep.

Registered as the kinds ``ellm_goals`` and ``housekeep_placement`` when imported; ``FAMILY_QUESTIONS``
names the question each supported family asks.
"""

from __future__ import annotations

from llmexplore.lm.parsing import DeclaredAnswer, Parsed, parse_bullets
from llmexplore.lm.questions import Question, register_question_kind


@register_question_kind
class EllmGoals(Question):
    """Which goals can a Crafter player pursue now? ELLM's suggester. Label: list of goal strings."""

    kind = "ellm_goals"
    answer_format = "- <verb> <object> (one goal per line), or - none"

    def fields(self, item: str) -> dict[str, str]:
        """The template's ``caption`` field: the item, a Crafter caption, as it is."""
        return {"caption": item}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """Goals from the reply's bullet lines (``parse_bullets``); ``- none`` alone is a valid []."""
        return parse_bullets(text, prompt)


@register_question_kind
class HousekeepPlacement(Question):
    """Does an object belong on a receptacle? ELLM on Housekeep. Item: (object, receptacle, room)."""

    kind = "housekeep_placement"
    answer_format = "Answer: yes or Answer: no"
    ANSWER = DeclaredAnswer("Answer", {"yes": True, "no": False}, answer_format)
    score_lead = "Answer:"
    score_options = {" yes": True, " no": False}
    neutral_item = ("N/A", "N/A", "N/A")

    def fields(self, item: tuple[str, str, str]) -> dict[str, str]:
        """The template's ``object``, ``receptacle`` and ``room`` fields of an (object, receptacle, room) item."""
        obj, receptacle, room = item
        return {"object": obj, "receptacle": receptacle, "room": room}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """True for ``Answer: yes``, False for ``Answer: no``; a failure
        when the reply declares no valid answer or conflicting ones."""
        return self.ANSWER.parse(text, prompt)


#: the question each family ELLM runs on asks
FAMILY_QUESTIONS: dict[str, type[Question]] = {"crafter": EllmGoals, "housekeep": HousekeepPlacement}
