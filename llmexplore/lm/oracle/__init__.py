"""The embedded oracle: deterministic, rule-based answers written like an LM's.

It reads the question from the prompt text alone (behind ``llmexplore lm serve`` only
text crosses the wire): each prompt template can be parsed back into its fields, the
template says which question kind was asked, and the kind's registered answer function
writes a short reasoning followed by the declared answer. The reply then goes through
the same parser as a real model's, so the whole pipeline runs without any model.

Extension point: ``register_oracle_kind(kind, answer)`` where ``answer(query)`` receives
an ``OracleQuery`` (kind, template version, parsed fields, prompt library, the oracle's
answer options) and returns the reply text. Game knowledge lives with its environment
family, which declares the kinds it answers (``EnvFamily.oracle_answers``, e.g.
``envs/nethack/oracle.py`` for Motif's and ONI's questions); they are registered here on
import and loaded on their first question. A family may also answer one goal of another family's
kind (``<kind>@<goal>``, e.g. MiniHack's own goal of the NetHack questions): a question whose goal
sentence is that goal's, in the kind's ``goals.yaml``, goes to it. A method's own answer knowledge
(MaestroMotif's reference code) lives with the method and is declared by the family it plays.

Answer options change answers, so they are part of the oracle's model id (and with it of
every cache key): ``placement_noise`` and ``placement_seed`` flip a seeded share of the
Housekeep yes/no answers to stand in for an imperfect LM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from llmexplore.lm.base import Completion, LanguageModel, TokenLogprob
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.errors import OracleError
from llmexplore.lm.templates import PromptLibrary, Template, load_prompts

ORACLE_VERSION = "6"  # a change of any answer rule is a new version (versions.py says why); part of every cache key

UNRECOGNISED = ("I can only answer the questions this suite asks (message preferences, message "
                "classification, goal suggestions, placements, skill code). I do not recognise this request.")


@dataclass(frozen=True)
class OracleQuery:
    kind: str
    version: str
    fields: Mapping[str, str]
    prompts: PromptLibrary
    #: the oracle's answer options (see ``OracleLM``)
    options: Mapping[str, Any] = field(default_factory=dict)


OracleAnswer = Callable[[OracleQuery], str]
_ANSWERS: dict[str, OracleAnswer] = {}
#: ``<kind>@<goal>``: the answer to questions of ``kind`` that ask ``goal`` (its sentence in ``<kind>/goals.yaml``)
GOAL_ANSWER = "@"


def register_oracle_kind(kind: str, answer: OracleAnswer, *, replace: bool = False) -> None:
    """Teach the oracle to answer one question kind (templates: ``<prompts>/<kind>/*.txt``)."""
    if kind in _ANSWERS and not replace and _ANSWERS[kind] is not answer:
        raise OracleError(f"the oracle already has an answer function for {kind!r}",
                          hint="pass replace=True to override it")
    _ANSWERS[kind] = answer


def oracle_kinds() -> list[str]:
    """The question kinds the oracle has an answer function for, sorted; families' kinds count before their
    modules load (at their first question)."""
    return sorted({key.split(GOAL_ANSWER)[0] for key in _ANSWERS})


def answer_function(kind: str, fields: Mapping[str, str], prompts: PromptLibrary) -> OracleAnswer | None:
    """The function answering one question: the answer registered for the goal it asks (``<kind>@<goal>``),
    else the kind's own; None when the kind has none."""
    instruction = fields.get("goal_instruction")
    if instruction is not None and any(key.startswith(kind + GOAL_ANSWER) for key in _ANSWERS):
        goal = _goal_named(prompts, kind, " ".join(instruction.split()))
        if goal is not None and f"{kind}{GOAL_ANSWER}{goal}" in _ANSWERS:
            return _ANSWERS[f"{kind}{GOAL_ANSWER}{goal}"]
    return _ANSWERS.get(kind)


@lru_cache(maxsize=256)
def _goal_named(prompts: PromptLibrary, kind: str, instruction: str) -> str | None:
    """The goal of ``<kind>/goals.yaml`` whose sentence is ``instruction`` (spacing aside); None when none is."""
    if not (prompts.root / kind / "goals.yaml").is_file():
        return None
    table = prompts.table(kind, "goals")
    return next((name for name, sentence in table.items() if " ".join(sentence.split()) == instruction), None)


class FamilyAnswer:
    """An answer an environment family declares by ``module:function``, imported on its first question
    (so importing the oracle imports no family's knowledge)."""

    def __init__(self, path: str):
        self.path = path
        self._function: OracleAnswer | None = None

    def __call__(self, query: OracleQuery) -> str:
        if self._function is None:
            from llmexplore.envs.family import import_path

            self._function = import_path(self.path)
        return self._function(query)


def register_family_answers() -> None:
    """Register the question kinds every environment family declares (``EnvFamily.oracle_answers``);
    a kind two families answer differently is refused."""
    from llmexplore.envs import families

    for family in families():
        for kind, path in family.oracle_answers.items():
            known = _ANSWERS.get(kind)
            if isinstance(known, FamilyAnswer) and known.path == path:
                continue
            if known is not None:
                where = f"'{known.path}'" if isinstance(known, FamilyAnswer) else "register_oracle_kind"
                raise OracleError(f"family '{family.name}' answers the question kind {kind!r} with '{path}', "
                                  f"which {where} already answers",
                                  hint="a question kind belongs to one family: rename one of them")
            register_oracle_kind(kind, FamilyAnswer(path))


register_family_answers()


class OracleLM(LanguageModel):
    """Backend ``oracle``. Options: ``latency_s`` (sleep per call, to simulate a slow model);
    ``placement_noise`` (share of Housekeep placement answers flipped, 0 to 1) and
    ``placement_seed`` (which ones), both part of the model id."""

    name = "oracle"
    supports_logprobs = True

    def __init__(self, prompts: PromptLibrary | str | None = None, latency_s: float = 0.0,
                 placement_noise: float = 0.0, placement_seed: int = 0):
        self.prompts = prompts if isinstance(prompts, PromptLibrary) else load_prompts(prompts)
        self.latency_s = float(latency_s)
        if not 0.0 <= float(placement_noise) <= 1.0:
            raise OracleError(f"placement_noise must be a rate in [0, 1], not {placement_noise}")
        self.options: dict[str, Any] = {"placement_noise": float(placement_noise), "placement_seed": int(placement_seed)}
        self._templates: list[Template] = [t for t in self.prompts.templates()]

    @property
    def model_id(self) -> str:
        """``llmexplore-oracle-<ORACLE_VERSION>``, plus the noise rate and seed for a noisy oracle: changed
        rules or noise never reuse cached answers."""
        base = f"llmexplore-oracle-{ORACLE_VERSION}"
        if self.options["placement_noise"] > 0:  # a noisy oracle is another model: its answers never mix in the cache
            base += f"+placement-noise{self.options['placement_noise']:g}-seed{self.options['placement_seed']}"
        return base

    def answer(self, prompt: str) -> str:
        """The reply to one prompt by the first template that parses it (a retry prompt gets the answer to its
        question); ``UNRECOGNISED`` when none does. OracleError for a kind with no answer function."""
        retry = self.prompts.retry.parse(prompt)
        if retry is not None:
            prompt = retry["question"]
        templates = self._templates  # replaced, never mutated: safe to read from several threads
        for i, template in enumerate(templates):
            fields = template.parse(prompt)
            if fields is None:
                continue
            if i:  # try the most recently used template first next time: batches repeat one kind
                self._templates = [template] + [t for t in templates if t is not template]
            kind, version = template.name.split("/", 1)
            answer = answer_function(kind, fields, self.prompts)
            if answer is None:
                raise OracleError(f"the oracle has no answer function for question kind {kind!r}",
                                  hint="import the module that registers it (register_oracle_kind), "
                                       "or use a real model for this kind")
            return answer(OracleQuery(kind, version, fields, self.prompts, self.options))
        return UNRECOGNISED

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """The oracle's answer to each prompt, whatever the sampling parameters, after one ``latency_s`` sleep
        per call; log-probabilities, when asked, are 0 for every token."""
        if self.latency_s:
            time.sleep(self.latency_s)
        out = []
        for prompt in prompts:
            text = self.answer(prompt)
            logprobs = None
            if params.logprobs is not None:
                # A deterministic model puts all probability on its one answer: logprob 0 per token.
                logprobs = tuple(TokenLogprob(tok, 0.0, {tok: 0.0} if params.logprobs else {})
                                 for tok in _tokens(text))
            out.append(Completion(text, "stop", logprobs))
        return out


def _tokens(text: str) -> list[str]:
    import re

    return re.findall(r"\s*\S+", text)
