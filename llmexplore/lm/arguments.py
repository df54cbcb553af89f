"""The command-line options that configure a language model, shared by every command that talks to one
(``llmexplore lm serve``/``annotate``, ``llmexplore motif annotate``, ``llmexplore maestro generate``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from llmexplore.errors import ConfigError, format_validation_error
from llmexplore.number_input import number_type
from llmexplore.option_input import parse_option_pairs

if TYPE_CHECKING:
    from llmexplore.lm.config import LMConfig


def add_lm_arguments(p: argparse.ArgumentParser) -> None:
    """The "language model" option group: backend, model, endpoint, cache, prompts and any other ``--lm`` pair."""
    g = p.add_argument_group("language model")
    g.add_argument("--backend", choices=("oracle", "openai", "vllm", "transformers"), help="default: oracle")
    g.add_argument("--model", help="served model name (openai), local weights folder (vllm), or local folder or "
                                   ".gguf file (transformers)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    g.add_argument("--endpoint", choices=("chat", "completion"),
                   help="openai/vllm: the chat API (default) or plain text completion")
    g.add_argument("--concurrency", type=number_type(int, 1, 10_000), help="openai: requests in flight")
    g.add_argument("--answer", choices=("generate", "score"),
                   help="closed-answer questions: generate and parse a reply (default), or score each option")
    g.add_argument("--max-tokens", type=number_type(int, 1, 1 << 20), help="most new tokens per reply (default 4096, Motif's setting)")
    g.add_argument("--cache", help="SQLite completion cache (':memory:' for none kept)")
    g.add_argument("--prompts", help="prompt template folder (default: configs/prompts)")
    g.add_argument("--lm", action="append", default=[], metavar="KEY=VALUE",
                   help="any other LM setting or backend option, repeated or comma-separated, e.g. "
                        "--lm timeout_s=30,options.latency_s=0.1")


def lm_config_from_args(args: argparse.Namespace) -> LMConfig:
    """The LM settings the options of ``add_lm_arguments`` give, checked (a ConfigError names each bad value)."""
    from pydantic import ValidationError

    from llmexplore.lm.config import LMConfig

    data: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in parse_option_pairs(args.lm).items():
        if key.startswith("options."):
            options[key[len("options."):]] = value
        else:
            data[key] = value
    for key in ("backend", "model", "base_url", "endpoint", "concurrency", "cache", "prompts", "answer", "max_tokens"):
        if getattr(args, key, None) is not None:
            data[key] = getattr(args, key)
    if options:
        data["options"] = {**data.get("options", {}), **options}
    try:
        return LMConfig(**data)
    except ValidationError as exc:
        raise ConfigError("invalid LM settings: " + format_validation_error(exc)) from None
