"""Questions: how an item becomes a prompt, and how a reply becomes a label.

Every LM-guided method asks questions of its own kinds, defined and registered in its folder
(``methods/motif/questions.py``, ``methods/oni/``, ``methods/ellm/``, ``methods/maestro/``); this
module holds what they share and knows no method. ``ask`` runs a batch through a model with the
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
from typing import Any, Callable, ClassVar, Hashable, Sequence, TypeVar

from llmexplore.errors import ConfigError, shown
from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.parsing import Parsed
from llmexplore.lm.templates import PromptLibrary, Template, flatten, load_prompts

#: what ``Question.shortcut`` returns when the item must be asked
NO_SHORTCUT = object()


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
    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """The label a reply declares, or a failed ``Parsed`` saying why; ``text`` None means no reply, and
        ``prompt`` lets the parser skip lines that only repeat it."""
        ...

    def prompt(self, item: Any) -> str:
        """The prompt for one item: its fields, each flattened to one line, rendered in the bound template."""
        fields = self.fields(item)
        for k, v in fields.items():
            if "\n" in v or "\r" in v:
                fields[k] = flatten(v)
        return self.template.render(**fields)

    def shortcut(self, item: Any) -> Any:
        """A label known without asking, or ``NO_SHORTCUT``."""
        return NO_SHORTCUT

    def key(self, item: Any) -> Hashable:
        """What makes two items the same question (used to deduplicate)."""
        return item

    def retry_prompt(self, prompt: str) -> str:
        """The second prompt after an unreadable reply: ``prompt`` in the retry template, with this kind's
        ``answer_format`` as the reminder."""
        return self.prompts.retry.render(question=prompt, answer_format=self.answer_format)

    def describe(self) -> str:
        """``kind/version``, naming the question in checkpoints and logs; kinds with settings add them."""
        return f"{self.kind}/{self.version}"


#: kind -> question class, filled by the methods that ask them (``register_question_kind``)
QUESTION_KINDS: dict[str, type[Question]] = {}
QuestionClass = TypeVar("QuestionClass", bound=type[Question])


def register_question_kind(cls: QuestionClass, *, replace: bool = False) -> QuestionClass:
    """Add a question kind (usable as a class decorator). Its templates live in ``<prompts>/<kind>/``."""
    if cls.kind in QUESTION_KINDS and not replace and QUESTION_KINDS[cls.kind] is not cls:
        raise ConfigError(f"question kind {cls.kind!r} is already registered")
    QUESTION_KINDS[cls.kind] = cls
    return cls


def make_question(kind: str, **kwargs: Any) -> Question:
    """A question of a registered kind. A method registers its kinds when it is imported (the built-in ones:
    ``llmexplore.methods.list_methods()``), so the LM layer names no method."""
    try:
        cls = QUESTION_KINDS[kind]
    except KeyError:
        raise ConfigError(f"unknown question kind {shown(kind)}",
                          hint=f"registered kinds: {', '.join(sorted(QUESTION_KINDS)) or 'none'}; a method registers "
                               "its kinds when it is imported (llmexplore.methods.list_methods() imports the "
                               "built-in ones)") from None
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
        if short is not NO_SHORTCUT:
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
