"""Building a backend from an ``LMConfig``; ``make_lm`` puts it behind the shared cache."""

from __future__ import annotations

import os
from typing import Any

from llmexplore.errors import ConfigError, shown
from llmexplore.lm.base import LanguageModel
from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.config import LMConfig

BACKENDS = ("oracle", "openai", "vllm", "transformers")


def make_backend(config: LMConfig) -> LanguageModel:
    """The bare backend (no cache). Checks reachability and the model name up front."""
    options: dict[str, Any] = dict(config.options)
    if config.backend == "oracle":
        from llmexplore.lm.oracle import OracleLM

        _only(options, {"latency_s", "placement_noise", "placement_seed"}, "oracle")
        return OracleLM(config.prompts, **options)
    if config.backend == "openai":
        from llmexplore.lm.backends.openai_backend import OpenAIBackend

        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ConfigError("the openai backend needs base_url (e.g. http://localhost:8000/v1)",
                              hint="set lm.base_url or $OPENAI_BASE_URL")
        _only(options, {"backoff_s", "max_backoff_s", "system", "prompts_per_request"}, "openai")
        return OpenAIBackend(config.model, base_url, os.environ.get(config.api_key_env), endpoint=config.endpoint,
                             concurrency=config.concurrency, timeout_s=config.timeout_s,
                             max_retries=config.max_retries, **options)
    if config.backend == "vllm":
        from llmexplore.lm.backends.vllm_backend import VLLMBackend

        return VLLMBackend(config.model, endpoint=config.endpoint, **options)
    if config.backend == "transformers":
        from llmexplore.lm.backends.transformers_backend import TransformersBackend

        _only(options, {"system", "device", "dtype", "batch_size", "threads", "autocast"}, "transformers")
        return TransformersBackend(config.model, endpoint=config.endpoint, **options)
    raise ConfigError(f"unknown LM backend {shown(config.backend)}", hint=f"backends: {', '.join(BACKENDS)}")


def make_lm(config: LMConfig | dict[str, Any] | None = None, *, cache_dir: str | os.PathLike | None = None
            ) -> CachedLM:
    """The backend behind the persistent cache: what every caller should use."""
    if config is None:
        config = LMConfig()
    elif isinstance(config, dict):
        config = parse_lm_config(config)
    cache = LMCache(config.cache_path(cache_dir))
    try:
        backend = make_backend(config)
        try:
            check_scoring(config, backend)
        except BaseException:
            backend.close()
            raise
    except BaseException:
        cache.close()
        raise
    lm = CachedLM(backend, cache)
    lm.answer = config.answer
    lm.calibrate = config.calibrate
    return lm


def check_scoring(config: LMConfig, backend: LanguageModel) -> None:
    """``answer=score`` needs a backend that scores answer options; say so before any work starts."""
    if config.answer == "score" and not backend.supports_scoring:
        raise ConfigError(f"answer=score needs log-probabilities of answer options, which the "
                          f"{backend.name} backend does not give",
                          hint="use answer=generate with this backend, or the transformers or vllm backend "
                               "(or openai with endpoint=completion on a server that echoes prompt "
                               "log-probabilities)")


def parse_lm_config(data: dict[str, Any], source: str = "LM settings") -> LMConfig:
    """An ``LMConfig`` from plain data (e.g. a settings file's ``lm`` section), with one clear error."""
    from pydantic import ValidationError

    try:
        return LMConfig(**data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid {source}: {problems}") from None


def _only(options: dict[str, Any], allowed: set[str], backend: str) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ConfigError(f"unknown option(s) for the {backend} backend: {', '.join(unknown)}",
                          hint=f"options: {', '.join(sorted(allowed)) or 'none'}")
