"""The one interface every language model backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from llmexplore.lm.config import SamplingParams


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    #: the most likely alternatives at this position (token -> logprob), when asked for
    top: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> list[Any]:
        """``[token, logprob, top]``, the compact form the cache stores."""
        return [self.token, self.logprob, self.top]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> "TokenLogprob":
        """Read back what ``to_json`` wrote."""
        return cls(str(data[0]), float(data[1]), dict(data[2]) if len(data) > 2 and data[2] else {})


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None = "stop"
    logprobs: tuple[TokenLogprob, ...] | None = None


class LanguageModel(ABC):
    """A text-in, text-out model answering batches of prompts.

    ``name`` identifies the backend and endpoint kind (it is part of cache keys, since the
    same model answers differently through a chat template), ``model_id`` the model, and
    ``cache_settings`` the rest of what changes its answers.
    """

    name: str = "lm"
    supports_logprobs: bool = False
    #: whether ``score`` works (closed-answer questions asked with ``answer=score``)
    supports_scoring: bool = False
    #: whether ``prompt_logprobs`` works (what a server needs to echo prompts with log-probabilities)
    supports_prompt_logprobs: bool = False

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Which model answers, readable; with ``name`` and ``cache_settings`` it keys the cache."""
        ...

    def cache_settings(self) -> dict[str, Any]:
        """What else changes this backend's answers (a system prompt, which weights, engine options), as
        JSON data: part of every cache key (``cache.cache_namespace``), so answers made under other
        settings are never reused. Empty (the default): ``name`` and ``model_id`` say it all."""
        return {}

    @abstractmethod
    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """One completion per prompt, in order. Raises ``LMUnavailableError`` when the model cannot answer.

        A backend that got some answers before failing attaches them to the exception as
        ``exc.partial`` ({prompt index: Completion}) so the cache keeps them.
        """

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """log P(option | prompt, lead) for every option of every prompt, summed over the option's tokens.

        ``lead`` starts the answer (e.g. "Preferred:"); each option continues it (e.g. " 1").
        """
        from llmexplore.lm.errors import LMRequestError

        raise LMRequestError(f"the {self.name} backend cannot score answers (it returns no prompt log-probabilities)",
                             hint="use answer=generate, or a backend that scores: transformers, vllm, or openai "
                                  "with the completion endpoint on a server that echoes prompt log-probabilities")

    def prompt_logprobs(self, prompts: Sequence[str],
                        starts: Sequence[int] | None = None) -> list[list[tuple[str, int, float | None]]]:
        """Each prompt's tokens as (text, character offset, log P(token | the tokens before it)).

        The first token has no context and gets None, as OpenAI-style ``echo`` replies give it; with
        ``starts`` (a character offset per prompt), so do the tokens that start before it.
        """
        from llmexplore.lm.errors import LMRequestError

        raise LMRequestError(f"the {self.name} backend cannot compute prompt log-probabilities",
                             hint="serve a backend that computes them (transformers)")

    def close(self) -> None:
        """Release connections, threads or GPU memory."""

    def __enter__(self) -> "LanguageModel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
