"""The text Motif and ONI judge, as each environment family declares it (``EnvFamily.message_text``).

Why one home: both methods read 256 bytes under the observation key ``message`` and ask an LM about the
text, but only the family knows where that text comes from (NetHack prints it; Crafter's caption is
written there by a wrapper) and in which words to ask (each family's question kinds have their own
prompts and oracle answers). The methods ask through this module and never name a family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from llmexplore.envs import families, get_family
from llmexplore.envs.family import MessageSource, MessageText, import_path
from llmexplore.errors import ConfigError
from llmexplore.lm.questions import QUESTION_KINDS, Question, register_question_kind

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym

    from llmexplore.envs.base import TaskSpec

MESSAGE_KEY = "message"
AskedQuestion = TypeVar("AskedQuestion", bound=Question)


def message_text(task: TaskSpec, method: str) -> MessageText:
    """The family's declaration; ConfigError naming the method when the family offers no text to judge."""
    text = get_family(task.family).message_text
    if text is None:
        raise ConfigError(f"method '{method}' judges the text of observations, and task '{task.name}' offers none "
                          f"(its family declares no message_text)",
                          hint="`llmexplore envs` lists the tasks; Motif and ONI run on NetHack, MiniHack and Crafter")
    return text


def message_source(task: TaskSpec, method: str) -> MessageSource:
    """The family's ``MessageSource`` (imported on first use)."""
    return import_path(message_text(task, method).source)


def needed_keys(task: TaskSpec) -> tuple[str, ...]:
    """The adapter keys Motif and ONI need: none where the family writes ``message`` itself (its source wraps
    the env), else ``message`` (so a family that declares no text is refused by the keys check)."""
    return () if get_family(task.family).message_text is not None else (MESSAGE_KEY,)


def with_message(env: gym.Env, task: TaskSpec, method: str) -> gym.Env:
    """The env with ``message`` in its observations, as the family writes it."""
    return message_source(task, method).wrap(env)


def question_class(base: type[AskedQuestion], task: TaskSpec, method: str) -> type[AskedQuestion]:
    """``base`` asked in the family's own kind (``MessageText.questions``): a subclass of ``base`` that differs only
    in its kind (prompts ``<prompts>/<kind>/``, the oracle's answers to it), registered on first use."""
    return _asked_in(base, message_text(task, method).questions.get(base.kind, base.kind), task.family)


def register_family_kinds(base: type[Question]) -> None:
    """Register ``base`` in every kind the registered families ask it in, so ``make_question(kind)`` knows them
    before a run asks (a family registered later gets its kinds on first use, by ``question_class``)."""
    for family in families():
        if family.message_text is not None and base.kind in family.message_text.questions:
            _asked_in(base, family.message_text.questions[base.kind], family.name)


def _asked_in(base: type[AskedQuestion], kind: str, family: str) -> type[AskedQuestion]:
    """The class asking ``base``'s question as ``kind``: one per kind, so labels, caches and checkpoints name it."""
    if kind == base.kind:
        return base
    known = QUESTION_KINDS.get(kind)
    if known is None:
        known = register_question_kind(type(f"{base.__name__}_{kind}", (base,), {
            "kind": kind, "__module__": base.__module__,
            "__doc__": f"{base.__name__}'s question in the prompts of kind {kind!r}."}))
    if not issubclass(known, base):
        raise ConfigError(f"question kind {kind!r} of family '{family}' is registered as {known.__name__}, "
                          f"which does not ask {base.__name__}'s question")
    return known
