"""Question kinds: how an item becomes a prompt, and how a reply becomes a label.

Every LM-guided method asks one of these. ``ask`` runs a batch through a model with the
shared policy: identical-caption shortcuts need no call, a reply that cannot be parsed
is asked once more with a format reminder, and a second failure gives the kind's
"unknown" label, counted. New kinds register with ``register_question_kind``.

A kind with a closed answer set (``score_options``) may instead be answered by scoring:
when the model's ``answer`` mode is "score", each option's text after the prompt and the
answer's lead (e.g. "Preferred:") is scored by its log-probability and the best one is the
label, so every item gets a label and nothing is parsed. By default the scores are
calibrated (Zhao et al. 2021, "Calibrate Before Use"): the options' log-probabilities for a
content-free item ("N/A" in every field) are subtracted, which removes a small model's
preference for an option regardless of the item (e.g. Gemma 3 270M's for "1").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
import sys
from typing import Any, Callable, ClassVar, Hashable, Sequence

from llmexplore.errors import ConfigError
from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.parsing import DeclaredAnswer, Parsed, parse_bullets, parse_code_block
from llmexplore.lm.templates import PromptLibrary, Template, flatten, load_prompts

LABEL_FIRST, LABEL_SECOND, LABEL_TIE, LABEL_UNKNOWN = 0, 1, 2, 3
_NO_SHORTCUT = object()


class Question(ABC):
    """One kind of question, bound to a prompt version."""

    kind: ClassVar[str]
    #: the label given when the reply cannot be read after one retry
    unknown: ClassVar[Any] = None
    #: how the prompt asks for the answer (repeated in the retry reminder)
    answer_format: ClassVar[str]
    #: closed answer set for ``answer=score``: the text starting the answer line, and option text -> label
    score_lead: ClassVar[str] = ""
    score_options: ClassVar[dict[str, Any]] = {}
    #: the content-free item used to calibrate scores
    neutral_item: ClassVar[Any] = "N/A"

    def __init__(self, version: str = "default", prompts: PromptLibrary | str | None = None):
        self.prompts = prompts if isinstance(prompts, PromptLibrary) else load_prompts(prompts)
        self.version = version
        self.template: Template = self.prompts.template(self.kind, version)

    @abstractmethod
    def fields(self, item: Any) -> dict[str, str]:
        """The template fields for one item."""

    @abstractmethod
    def parse(self, text: str | None, prompt: str | None = None) -> Parsed: ...

    def prompt(self, item: Any) -> str:
        fields = self.fields(item)
        for k, v in fields.items():
            if "\n" in v or "\r" in v:
                fields[k] = flatten(v)
        return self.template.render(**fields)

    def shortcut(self, item: Any) -> Any:
        """A label known without asking, or ``_NO_SHORTCUT``."""
        return _NO_SHORTCUT

    def key(self, item: Any) -> Hashable:
        """What makes two items the same question (used to deduplicate)."""
        return item

    def retry_prompt(self, prompt: str) -> str:
        return self.prompts.retry.render(question=prompt, answer_format=self.answer_format)

    def describe(self) -> str:
        return f"{self.kind}/{self.version}"


# -- the kinds --------------------------------------------------------------------------------
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
            raise ConfigError(f"unknown Motif goal {goal!r}", hint=f"goals: {', '.join(goals)}")
        self.goal = goal
        self.goal_instruction = goals[goal]

    def fields(self, item: tuple[str, str]) -> dict[str, str]:
        first, second = item
        return {"goal_instruction": self.goal_instruction, "first": first, "second": second}

    def shortcut(self, item: tuple[str, str]) -> Any:
        return LABEL_TIE if item[0] == item[1] else _NO_SHORTCUT

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        return self.ANSWER.parse(text, prompt)

    def describe(self) -> str:
        return f"{self.kind}/{self.version} goal={self.goal}"


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
            raise ConfigError(f"unknown ONI classification goal {goal!r}", hint=f"goals: {', '.join(goals)}")
        self.goal = goal
        self.goal_instruction = goals[goal]

    def fields(self, item: str) -> dict[str, str]:
        return {"goal_instruction": self.goal_instruction, "message": item}

    def describe(self) -> str:
        return f"{self.kind}/{self.version} goal={self.goal}"

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        return self.ANSWER.parse(text, prompt)


class EllmGoals(Question):
    """Which goals can a Crafter player pursue now? ELLM's suggester. Label: list of goal strings."""

    kind = "ellm_goals"
    answer_format = "- <verb> <object> (one goal per line), or - none"

    def fields(self, item: str) -> dict[str, str]:
        return {"caption": item}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        return parse_bullets(text, prompt)


class HousekeepPlacement(Question):
    """Does an object belong on a receptacle? ELLM on Housekeep. Item: (object, receptacle, room)."""

    kind = "housekeep_placement"
    answer_format = "Answer: yes or Answer: no"
    ANSWER = DeclaredAnswer("Answer", {"yes": True, "no": False}, answer_format)
    score_lead = "Answer:"
    score_options = {" yes": True, " no": False}
    neutral_item = ("N/A", "N/A", "N/A")

    def fields(self, item: tuple[str, str, str]) -> dict[str, str]:
        obj, receptacle, room = item
        return {"object": obj, "receptacle": receptacle, "room": room}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        return self.ANSWER.parse(text, prompt)


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


class MaestroCode(Question):
    """A code request for MaestroMotif (skill predicates, policies over skills). Item: ``CodeRequest``.

    The label is the code text, unchecked; MaestroMotif validates it before running it.
    """

    kind = "maestro_code"
    answer_format = "one fenced code block marked python"

    def fields(self, item: CodeRequest) -> dict[str, str]:
        return {"kind": item.kind, "target": item.target, "description": item.description,
                "signature": item.signature, "contract": item.contract, "feedback": item.feedback}

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        return parse_code_block(text, prompt)


QUESTION_KINDS: dict[str, type[Question]] = {}


def register_question_kind(cls: type[Question], *, replace: bool = False) -> type[Question]:
    """Add a question kind (usable as a class decorator). Its templates live in ``<prompts>/<kind>/``."""
    if cls.kind in QUESTION_KINDS and not replace and QUESTION_KINDS[cls.kind] is not cls:
        raise ConfigError(f"question kind {cls.kind!r} is already registered")
    QUESTION_KINDS[cls.kind] = cls
    return cls


for _cls in (MotifPreference, OniClassification, EllmGoals, HousekeepPlacement, MaestroCode):
    register_question_kind(_cls)


def make_question(kind: str, **kwargs: Any) -> Question:
    try:
        cls = QUESTION_KINDS[kind]
    except KeyError:
        raise ConfigError(f"unknown question kind {kind!r}", hint=f"kinds: {', '.join(sorted(QUESTION_KINDS))}") from None
    return cls(**kwargs)


# -- asking -----------------------------------------------------------------------------------
@dataclass
class AskResult:
    labels: list[Any]
    #: prompts sent (first asks and retries, or scored), shortcuts taken, retries, final failures
    asked: int = 0
    shortcuts: int = 0
    retried: int = 0
    unknown: int = 0
    failure_reasons: Counter = field(default_factory=Counter)


def answer_mode(lm: LanguageModel, question: Question) -> str:
    """"score" when the model is set to score and the question has a closed answer set, else "generate"."""
    return "score" if getattr(lm, "answer", "generate") == "score" and question.score_options else "generate"


def ask(lm: LanguageModel, question: Question, items: Sequence[Any], params: SamplingParams) -> AskResult:
    """Labels for ``items`` in order. Raises what the model raises (e.g. ``LMUnavailableError``).

    Generated replies are parsed; a reply cut off by the token limit loses its unfinished
    last line first (a half-written goal or answer is not an answer).
    """
    labels: list[Any] = [question.unknown] * len(items)
    result = AskResult(labels)
    todo: list[int] = []
    prompts: list[str] = []
    for i, item in enumerate(items):
        short = question.shortcut(item)
        if short is not _NO_SHORTCUT:
            labels[i] = short
            result.shortcuts += 1
        else:
            todo.append(i)
            prompts.append(question.prompt(item))
    if not todo:
        return result
    if answer_mode(lm, question) == "score":
        options = list(question.score_options)
        calibrate = getattr(lm, "calibrate", True)
        scored = lm.score(prompts + ([question.prompt(question.neutral_item)] if calibrate else []),
                          question.score_lead, options)
        prior = scored.pop() if calibrate else [0.0] * len(options)
        for i, scores in zip(todo, scored):
            best = max(range(len(options)), key=lambda o: scores[o] - prior[o])
            labels[i] = question.score_options[options[best]]
        result.asked += len(prompts)
        return result
    replies = lm.generate(prompts, params)
    result.asked += len(prompts)
    again: list[int] = []
    for j, (i, reply) in enumerate(zip(todo, replies)):
        parsed = question.parse(_finished(reply), prompts[j])
        if parsed.ok:
            labels[i] = parsed.value
        else:
            again.append(j)
    if again:
        retry_prompts = [question.retry_prompt(prompts[j]) for j in again]
        replies = lm.generate(retry_prompts, params)
        result.asked += len(retry_prompts)
        result.retried += len(again)
        for j, prompt, reply in zip(again, retry_prompts, replies):
            parsed = question.parse(_finished(reply), prompt)
            if parsed.ok:
                labels[todo[j]] = parsed.value
            else:
                result.unknown += 1
                result.failure_reasons[parsed.reason] += 1
    return result


#: after this many generated answers, a share of unknown ones at least UNKNOWN_SHARE says the model does not
#: answer in the asked format (a base model, a wrong chat template): warn then, not at the end of a run
UNKNOWN_CHECK_AFTER = 50
UNKNOWN_SHARE = 0.9


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class UnknownAnswerWatch:
    """Counts generated answers that came back unknown and warns once, as soon as UNKNOWN_CHECK_AFTER questions
    were asked and nearly all were unknown, naming ``--answer score`` where the question has a closed answer."""

    def __init__(self, question: Question, notify: Callable[[str], None] = _to_stderr):
        self.question = question
        self.notify = notify
        self.questions = 0
        self.unknown = 0
        self.warned = False

    def add(self, lm: LanguageModel, items: int, result: AskResult) -> str | None:
        """Count one ``ask`` of ``items`` items; returns the warning when this call gave it."""
        if answer_mode(lm, self.question) != "generate":
            return None
        self.questions += items - result.shortcuts
        self.unknown += result.unknown
        if self.warned or self.questions < UNKNOWN_CHECK_AFTER or self.unknown < UNKNOWN_SHARE * self.questions:
            return None
        self.warned = True
        fix = ("ask with `--answer score` (`--lm answer=score`): the model then scores the answer options instead of "
               "writing a reply, which works with base models" if self.question.score_options else
               "use an instruction-tuned model, or the chat endpoint (`--lm endpoint=chat`) with its chat template")
        text = (f"warning: {self.unknown} of the first {self.questions} {self.question.kind} questions answered by "
                f"generation came back unknown: the model does not answer in the asked format (a base model?), so "
                f"nearly nothing gets labelled; {fix}")
        self.notify(text)
        return text


def _finished(reply: Completion) -> str:
    """The reply's text without a last line the token limit cut off."""
    text = reply.text
    if reply.finish_reason == "length" and text and not text.endswith("\n"):
        return text[:text.rfind("\n") + 1]
    return text
