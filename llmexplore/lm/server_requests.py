"""Reading the body of an OpenAI-style completion request: every field checked, sizes capped.

``read_request`` turns a parsed JSON body into prompts and ``SamplingParams`` or raises
``RequestError`` with the HTTP status to answer: 400 naming the field and what it must be,
404 for another model, 413 naming the limit a request exceeds. Fields of OpenAI's API that the
server does not use (``user``, penalties, ...) are accepted and ignored; fields that would change
the answer and are not supported (``n`` > 1, ``stream``) are refused, and so are fields OpenAI's
API does not have, numbers that are not finite and chat roles it does not know (HTTP 400, as
OpenAI's API answers), so a typo never passes silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llmexplore.lm.config import SamplingParams

#: OpenAI's limits on alternatives per token and on stop sequences (we allow a few more stops)
MAX_TOP_LOGPROBS = 20
MAX_STOP = 16


@dataclass(frozen=True)
class RequestLimits:
    """What one request may ask for."""

    #: prompts in one request (a list-valued ``prompt``)
    max_prompts: int = 4096
    #: bytes of request body
    max_bytes: int = 32 * 1024 * 1024
    #: ``max_tokens`` one request may ask for
    max_tokens: int = 1 << 20


#: the request fields of OpenAI's API (https://platform.openai.com/docs/api-reference), per endpoint
COMMON_FIELDS = frozenset({"model", "temperature", "top_p", "n", "stream", "stream_options", "stop", "max_tokens",
                           "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "seed", "user"})
COMPLETION_FIELDS = COMMON_FIELDS | {"prompt", "echo", "suffix", "best_of", "max_completion_tokens"}
CHAT_FIELDS = COMMON_FIELDS | {
    "messages", "top_logprobs", "max_completion_tokens", "response_format", "tools", "tool_choice",
    "parallel_tool_calls", "functions", "function_call", "metadata", "store", "service_tier", "modalities",
    "audio", "prediction", "reasoning_effort", "web_search_options", "verbosity", "prompt_cache_key",
    "safety_identifier",
    "echo"}  # not OpenAI's, but refused below with a message saying where it belongs
#: the chat roles of OpenAI's API
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class RequestError(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.code = status, code


def read_echo(body: Any, chat: bool) -> tuple[bool, bool]:
    """(echo, generate) of a request: ``echo`` returns the prompt (with its tokens' log-probabilities when
    ``logprobs`` is set) before the answer, and ``max_tokens`` 0 with it asks for no answer at all, as
    OpenAI's legacy completions and vLLM take it (how clients score text)."""
    if not isinstance(body, dict):
        raise RequestError(400, "request body must be a JSON object")
    echo = body.get("echo", False)
    if echo is None:
        echo = False
    if not isinstance(echo, bool):
        raise RequestError(400, "`echo` must be true or false")
    if echo and chat:
        raise RequestError(400, "`echo` is for /v1/completions; chat completions do not echo the prompt")
    zero = any(body.get(k) == 0 and not isinstance(body.get(k), bool) for k in ("max_tokens", "max_completion_tokens"))
    return echo, not (zero and echo)  # max_tokens 0 without echo is refused by ``read_request``


#: llmexplore's extension to echo requests: a character offset into every prompt; only the tokens that
#: start at or after it get log-probabilities (the others null), so the server projects only those positions
#: onto the vocabulary (what a client scoring answer options needs). Other servers ignore or refuse it.
ECHO_FROM = "echo_logprobs_from"


def read_echo_from(body: dict[str, Any], echo: bool) -> int:
    """The ``echo_logprobs_from`` offset of an echo request (0: every token)."""
    value = body.get(ECHO_FROM)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RequestError(400, f"`{ECHO_FROM}` must be a non-negative integer (a character offset into each prompt)")
    if not echo:
        raise RequestError(400, f"`{ECHO_FROM}` only applies with `echo`: true")
    return value


def read_request(body: Any, chat: bool, model: str,
                 limits: RequestLimits) -> tuple[list[str], SamplingParams]:
    """The prompts and sampling parameters of a request body; ``RequestError`` for anything wrong."""
    if not isinstance(body, dict):
        raise RequestError(400, "request body must be a JSON object")
    _check_fields(body, chat)
    if read_echo(body, chat) == (True, False):  # echo only: the answer's length does not matter
        body = {k: v for k, v in body.items() if k not in ("max_tokens", "max_completion_tokens")}
    name = body.get("model")
    if not isinstance(name, str):
        raise RequestError(400, "`model` must be a string naming the served model")
    if name != model:
        raise RequestError(404, f"The model `{name[:200]}` does not exist.", "model_not_found")
    prompts = _chat_prompts(body) if chat else _completion_prompts(body, limits)
    return prompts, _params(body, chat, limits)


def _check_fields(body: dict[str, Any], chat: bool) -> None:
    """Refuse a field OpenAI's API does not have for this endpoint (a typo would otherwise be ignored)."""
    known = CHAT_FIELDS if chat else COMPLETION_FIELDS | {ECHO_FROM}
    unknown = sorted(str(k)[:60] for k in body if k not in known)
    if unknown:
        raise RequestError(400, f"Unrecognized request argument supplied: {', '.join(unknown)} (this endpoint takes "
                                f"{', '.join(sorted(known))})")


def _completion_prompts(body: dict[str, Any], limits: RequestLimits) -> list[str]:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt:
        if len(prompt) > limits.max_prompts:
            raise RequestError(413, f"{len(prompt)} prompts in one request; this server takes at most "
                                    f"{limits.max_prompts} per request: split it", "request_too_large")
        for i, p in enumerate(prompt):
            if not isinstance(p, str):
                raise RequestError(400, f"`prompt[{i}]` must be a string")
        return list(prompt)
    raise RequestError(400, "`prompt` must be a string or a non-empty list of strings")


def _chat_prompts(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "`messages` must be a non-empty list")
    parts = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise RequestError(400, f"`{where}` must be an object with `role` and `content`")
        role = message.get("role")
        if not isinstance(role, str):
            raise RequestError(400, f"`{where}.role` must be a string, one of {', '.join(CHAT_ROLES)}")
        if role not in CHAT_ROLES:
            raise RequestError(400, f"`{where}.role` is {role[:40]!r}; supported roles: {', '.join(CHAT_ROLES)}")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(_text_part(part, f"{where}.content[{j}]") for j, part in enumerate(content))
        if not isinstance(content, str):
            raise RequestError(400, f"`{where}.content` must be a string or a list of text parts")
        parts.append(content)
    return ["\n\n".join(parts)]


def _text_part(part: Any, where: str) -> str:
    if not isinstance(part, dict):
        raise RequestError(400, f"`{where}` must be an object like {{\"type\": \"text\", \"text\": \"...\"}}")
    kind = part.get("type", "text")
    if kind != "text":
        raise RequestError(400, f"`{where}.type` is {str(kind)[:40]!r}; this server reads only text parts")
    text = part.get("text")
    if not isinstance(text, str):
        raise RequestError(400, f"`{where}.text` must be a string")
    return text


def _number(body: dict[str, Any], key: str, default: float, low: float, high: float,
            low_open: bool = False) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestError(400, f"`{key}` must be a number, finite and in [{low:g}, {high:g}]; got {value!r}")
    if value > high or value < low or (low_open and value == low):
        bracket = "(" if low_open else "["
        raise RequestError(400, f"`{key}` must be in {bracket}{low:g}, {high:g}]; got {value}")
    return float(value)


def _integer(body: dict[str, Any], key: str, low: int, high: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(400, f"`{key}` must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise RequestError(400, f"`{key}` must be {bound}; got {value}")
    return value


def _params(body: dict[str, Any], chat: bool, limits: RequestLimits) -> SamplingParams:
    temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0, low_open=True)
    max_tokens = (_integer(body, "max_tokens", 1, limits.max_tokens)
                  or _integer(body, "max_completion_tokens", 1, limits.max_tokens)
                  or min(SamplingParams.model_fields["max_tokens"].default, limits.max_tokens))  # Motif's 4,096
    seed = _integer(body, "seed", -(2 ** 63), 2 ** 64 - 1)
    stop = body.get("stop")
    if stop is None:
        stop = ()
    elif isinstance(stop, str):
        stop = (stop,)
    elif isinstance(stop, list) and len(stop) <= MAX_STOP and all(isinstance(s, str) for s in stop):
        stop = tuple(stop)
    else:
        raise RequestError(400, f"`stop` must be a string or a list of at most {MAX_STOP} strings")
    if _integer(body, "n", 1) not in (None, 1):
        raise RequestError(400, "`n` must be 1: this server answers each prompt once")
    if body.get("stream") not in (None, False):
        raise RequestError(400, "`stream` must be false: this server does not stream")
    logprobs: int | None = None
    top = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if chat:
        flag = body.get("logprobs")
        if flag is not None and not isinstance(flag, bool):
            raise RequestError(400, "`logprobs` must be true or false for chat completions")
        if flag:
            logprobs = top or 0
    else:
        logprobs = _integer(body, "logprobs", 0, MAX_TOP_LOGPROBS)
    return SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens, stop=stop, seed=seed,
                          logprobs=logprobs)
