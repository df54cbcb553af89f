"""Which language model a run talks to, and how it samples. The embedded oracle needs no server or weights."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: where the shared completion cache lives when nothing else says
CACHE_ENV = "LLMEXPLORE_LM_CACHE"
CACHE_FILE = "lm-cache.sqlite3"
#: a cache that lives only as long as the process (still exercises the cache code)
MEMORY_CACHE = ":memory:"


class SamplingParams(BaseModel):
    """Sampling settings; part of every cache key, so changing one never reuses old answers.

    Defaults are the published ones for preference and classification annotation
    (temperature 0.1, top_p 0.95, up to 4,096 new tokens: Motif's prompts ask for
    reasoning first, and a lower cap cuts the answer line off).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    temperature: float = Field(0.1, ge=0.0, le=2.0, description="sampling temperature, 0 to 2 (0: greedy)")
    top_p: float = Field(
        0.95, gt=0.0, le=1.0, description="nucleus sampling: sample from the smallest set of tokens holding "
                                          "this probability, in (0, 1]")
    max_tokens: int = Field(4096, ge=1, description="most new tokens per reply (>= 1)")
    stop: tuple[str, ...] = Field((), description="strings that end a reply where they appear")
    seed: int | None = Field(
        None, description="sampling seed sent to the backend; none: the backend's own randomness")
    logprobs: int | None = Field(None, ge=0, le=20, description="number of top alternatives per token; None: no logprobs")

    def cache_text(self) -> str:
        """Canonical text of the settings, stable across runs and processes."""
        return self.model_dump_json()


class LMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: Literal["oracle", "openai", "vllm", "transformers"] = Field(
        "oracle", description="oracle | openai | vllm | transformers")
    model: str | None = Field(None, description="model name the server serves, or a local weights path "
                                                "(vllm: folder; transformers: folder or .gguf file)")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://host:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key, if any")
    cache: str | None = Field(None, description="SQLite cache file; default: one shared cache under the results dir")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific options")
    # -- added with the LM subsystem; defaults keep older specs valid -------------------------
    endpoint: Literal["chat", "completion"] = Field("chat", description="openai/vllm: chat or plain completion API")
    concurrency: int = Field(32, ge=1, description="openai: requests in flight at once")
    timeout_s: float = Field(120.0, gt=0, description="openai: seconds before a request is abandoned and retried")
    max_retries: int = Field(6, ge=0, description="openai: retries on timeouts, 429, 5xx and malformed replies")
    prompts: str | None = Field(None, description="folder of prompt templates; default: configs/prompts")
    temperature: float = Field(
        0.1, ge=0.0, le=2.0, description="sampling temperature, 0 to 2 (published annotation: 0.1)")
    top_p: float = Field(
        0.95, gt=0.0, le=1.0, description="nucleus sampling mass, in (0, 1] (published annotation: 0.95)")
    max_tokens: int = Field(
        4096, ge=1, description="most new tokens per reply (>= 1); a low cap cuts reasoning prompts' answer "
                                "line off")
    seed: int | None = Field(
        None, description="sampling seed sent to the backend; none: the backend's own randomness")
    answer: Literal["generate", "score"] = Field(
        "generate", description="closed-answer questions: generate a reply and parse it, or score each "
                                "option's log-probability after the prompt (transformers, vllm, openai completion)")
    calibrate: bool = Field(True, description="answer=score: subtract the options' scores for a content-free item "
                                              "(removes a model's fixed bias toward one option)")

    def sampling(self, **overrides: Any) -> SamplingParams:
        """The sampling settings of this config, with ``overrides`` (e.g. a question's own max_tokens)."""
        values = dict(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens, seed=self.seed)
        values.update(overrides)
        return SamplingParams(**values)

    def cache_path(self, default_dir: str | os.PathLike | None = None) -> str:
        """The cache file: explicit setting, then $LLMEXPLORE_LM_CACHE, then ``default_dir``, then ~/.cache."""
        if self.cache:
            return self.cache if self.cache == MEMORY_CACHE else str(Path(self.cache).expanduser())
        env = os.environ.get(CACHE_ENV)
        if env:
            return env if env == MEMORY_CACHE else str(Path(env).expanduser())
        if default_dir is not None:
            return str(Path(default_dir) / CACHE_FILE)
        return str(Path("~/.cache/llmexplore").expanduser() / CACHE_FILE)
