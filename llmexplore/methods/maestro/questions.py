"""MaestroMotif's question: a function for a skill or a task, asked of an LM as code.

Registered as the kind ``maestro_code`` when imported; its prompts are ``<prompts>/maestro_code/``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmexplore.lm.parsing import Parsed, parse_code_block
from llmexplore.lm.questions import Question, register_question_kind


@dataclass(frozen=True)
class CodeRequest:
    """What MaestroMotif asks for: a function for a skill or a task, with a one-line description.

    ``feedback`` is "none" on a first attempt, else the validator's reason for refusing the
    previous reply (MaestroMotif asks again once with it).
    """

    kind: str  # "skill", "training policy" or "task"
    target: str  # the skill or task name
    description: str
    signature: str  # e.g. "initiation(obs)"
    contract: str
    feedback: str = "none"


@register_question_kind
class MaestroCode(Question):
    """A code request for MaestroMotif (skill predicates, policies over skills). Item: ``CodeRequest``.

    The label is the code text, unchecked; MaestroMotif validates it before running it.
    """

    kind = "maestro_code"
    answer_format = "one fenced code block marked python"

    def fields(self, item: CodeRequest) -> dict[str, str]:
        """The template fields of a ``CodeRequest``: kind, target, description, signature, contract and feedback."""
        return {"kind": item.kind, "target": item.target, "description": item.description,
                "signature": item.signature, "contract": item.contract, "feedback": item.feedback}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """The text of the reply's one python code block, unchecked;
        a failure when there is none or several that differ."""
        return parse_code_block(text, prompt)
