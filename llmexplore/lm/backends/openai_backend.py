"""Backend ``openai``: any OpenAI-compatible server (vLLM, FastChat, llama.cpp, Ollama, hosted APIs).

Uses the official ``openai`` client's async API on a private event loop thread, so a
batch of prompts is answered with up to ``concurrency`` requests in flight while callers
stay synchronous (and may call from several threads). Each request is retried with
exponential backoff and jitter on timeouts, dropped connections, 408/409/429, 5xx and
malformed replies; the client's own retries are off so every attempt is counted here.
Invalid requests (400) and a wrong model name (404) stop at once with a clear error.

With the completion endpoint, ``prompts_per_request`` > 1 sends several prompts in one
request (the API's list-valued ``prompt``; vLLM and ``llmexplore lm serve`` accept it),
which cuts the client's per-request cost when the model is fast.

Answer scoring (``score``) needs the completion endpoint and a server that echoes the
prompt's token log-probabilities (``echo`` with ``logprobs``, as vLLM's server does): the
prompt, the answer's lead and each option are sent as one text, and the option's score is
the sum over the tokens that start at or after the option. Scoring requests carry the
extension field ``echo_logprobs_from`` (the option's character offset): ``llmexplore lm
serve`` then computes only the options' log-probabilities; a server that refuses the field
is asked again without it. Scoring requests are retried like generation's.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from llmexplore.errors import require
from llmexplore.lm.base import Completion, LanguageModel, TokenLogprob
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.errors import LMRequestError, LMUnavailableError, ModelNotFoundError
from llmexplore.lm.server_requests import ECHO_FROM

T = TypeVar("T")

_RETRY_STATUS = {408, 409, 425, 429}
#: requests in flight per client (each client has its own connection pool)
_PER_CLIENT = 8


class MalformedReply(Exception):
    """The server answered 2xx with a body that is not a completion."""


class OpenAIBackend(LanguageModel):
    supports_logprobs = True

    def __init__(self, model: str | None, base_url: str, api_key: str | None = None, *, endpoint: str = "chat",
                 concurrency: int = 32, timeout_s: float = 120.0, max_retries: int = 6, backoff_s: float = 0.5,
                 max_backoff_s: float = 20.0, system: str | None = None, prompts_per_request: int = 1,
                 check: bool = True):
        openai = require("openai", "lm", "The OpenAI-compatible LM backend")
        if endpoint not in ("chat", "completion"):
            raise LMRequestError(f"endpoint must be 'chat' or 'completion', not {endpoint!r}")
        self._openai = openai
        # Requests go through the client's generic ``post`` with plain JSON bodies: the typed
        # ``create`` helpers re-validate every nested parameter and build typed replies, which
        # costs more CPU than the HTTP exchange itself when the model is fast. Errors are the
        # client's own exceptions.
        self._raw_response = _response_type()
        self.base_url = base_url.rstrip("/")
        self.endpoint = endpoint
        self.name = f"openai-{endpoint}"
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.system = system
        if prompts_per_request < 1 or (prompts_per_request > 1 and endpoint != "completion"):
            raise LMRequestError("prompts_per_request > 1 needs the completion endpoint (chat takes one prompt)")
        self.prompts_per_request = prompts_per_request
        self.supports_scoring = endpoint == "completion"
        #: send ``echo_logprobs_from`` with scoring requests (dropped once a server refuses it)
        self._echo_from = True
        self._api_key = api_key or "EMPTY"
        self._rng = random.Random()
        #: attempts that failed and were retried, by cause (for reports and tests)
        self.retry_counts: dict[str, int] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="openai-backend", daemon=True)
        self._thread.start()
        self._client = self._run(self._make_client())
        self._model = model or ""
        if check:
            try:
                self._model = self._check_model(model)
            except BaseException:
                self.close()  # nobody holds a backend that failed its check: its clients and loop go now
                raise

    # -- plumbing --------------------------------------------------------------------------
    async def _make_client(self) -> Any:
        clients = [self._openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0,
                                            timeout=self.timeout_s, http_client=self._http_client())
                   for _ in range(-(-self.concurrency // _PER_CLIENT))]
        #: one entry per request allowed in flight, naming the client that request uses
        self._slots: asyncio.Queue = asyncio.Queue()
        for i in range(self.concurrency):
            self._slots.put_nowait(clients[i % len(clients)])
        self._clients = clients
        return clients[0]

    def _http_client(self) -> Any:
        """The client's aiohttp transport when aiohttp is installed (part of the ``lm`` extra): its
        per-request CPU cost is about a third of the default one's, which decides throughput
        when the model answers in a millisecond. Otherwise the client's default."""
        try:
            import aiohttp  # noqa: F401

            return self._openai.DefaultAioHttpClient(timeout=self.timeout_s)
        except (ImportError, RuntimeError):
            return None

    def _run(self, coro: Any) -> Any:
        if not self._thread.is_alive():
            raise LMUnavailableError("the OpenAI backend was closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Close the clients and the loop thread; later calls raise LMUnavailableError. Idempotent."""
        if self._thread.is_alive():
            try:
                self._run(self._close_clients())
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout=10)
                self._loop.close()

    async def _close_clients(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients))

    @property
    def model_id(self) -> str:
        """The model requests name: the one given, else the server's only one (empty: unchecked, unset)."""
        return self._model

    def cache_settings(self) -> dict[str, Any]:
        """The system prompt, when set (part of what the model reads). The server's address is left out:
        the served model's name says which model answers, and the same server moved to another host or
        port (``lm serve`` on a free port) should still hit its answers."""
        return {"system": self.system} if self.system else {}

    # -- model check -----------------------------------------------------------------------
    def served_models(self) -> list[str]:
        """The model ids the server lists at ``/models``; an unreachable server is tried 3 times, then
        LMUnavailableError (at once for an HTTP error status)."""
        async def fetch() -> list[str]:
            page = await self._client.models.list()
            return [m.id for m in page.data]

        last: Exception | None = None
        for attempt in range(3):
            try:
                return self._run(fetch())
            except (self._openai.APIConnectionError, self._openai.APITimeoutError,
                    self._openai.InternalServerError) as exc:
                last = exc
                import time

                time.sleep(0.2 * (attempt + 1))
            except self._openai.APIStatusError as exc:
                raise LMUnavailableError(f"LM server at {self.base_url} answered /models with HTTP "
                                         f"{exc.status_code}: {_short(exc)}",
                                         hint="check base_url (it usually ends in /v1) and the API key") from None
            except Exception as exc:  # garbage instead of a model list
                last = exc
        raise LMUnavailableError(f"cannot reach the LM server at {self.base_url} ({type(last).__name__}: {_short(last)})",
                                 hint="start the server (e.g. `vllm serve MODEL` or `llmexplore lm serve`) "
                                      "or fix base_url")

    def _check_model(self, model: str | None) -> str:
        served = self.served_models()
        if model is None:
            if len(served) == 1:
                return served[0]
            raise ModelNotFoundError(f"no model named, and the server at {self.base_url} serves "
                                     f"{len(served)} models", hint=f"pick one of: {', '.join(served) or '(none)'}")
        if model not in served:
            raise ModelNotFoundError(f"the LM server at {self.base_url} does not serve model {model!r}",
                                     hint=f"it serves: {', '.join(served) or '(none)'}")
        return model

    # -- generation ------------------------------------------------------------------------
    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """Requests of ``prompts_per_request`` prompts, up to ``concurrency`` in flight; on a failure the
        answers that did arrive ride on the error as ``exc.partial``."""
        if not prompts:
            return []

        size = self.prompts_per_request
        groups = [list(prompts[i:i + size]) for i in range(0, len(prompts), size)]

        async def batch() -> list[Completion]:
            answers = await asyncio.gather(*(self._one(g, params) for g in groups), return_exceptions=True)
            failures = [a for a in answers if isinstance(a, BaseException)]
            if failures:
                # keep what did come back: the cache stores it, so it is never asked again
                done: dict[int, Completion] = {}
                for g, answer in enumerate(answers):
                    if not isinstance(answer, BaseException):
                        done.update({g * size + j: c for j, c in enumerate(answer)})
                error = failures[0]
                error.partial = done  # type: ignore[attr-defined]
                raise error
            return [c for group in answers for c in group]  # type: ignore[union-attr]

        return self._run(batch())

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """Scores from the server's echoed prompt log-probabilities, one request per prompt (completion
        endpoint only; the base class's refusal otherwise); prompt and ``lead`` are joined by a newline."""
        if not self.supports_scoring:
            return super().score(prompts, lead, options)
        contexts = [p + "\n" + lead for p in prompts]

        async def batch() -> list[list[float]]:
            return list(await asyncio.gather(*(self._score_one(ctx, options) for ctx in contexts)))

        return self._run(batch())

    async def _score_one(self, context: str, options: Sequence[str]) -> list[float]:
        """One request per prompt: its options' texts together, echoed with log-probabilities, no answer.
        Retried like generation; asks the server to score only the options' tokens (``echo_logprobs_from``,
        understood by ``llmexplore lm serve``) until a server refuses that field, then the whole text."""
        client = await self._slots.get()
        try:
            choices = await self._retrying(lambda: self._echo(client, context, options), refused=self._echo_refused)
        finally:
            self._slots.put_nowait(client)
        return [self._option_logprob(choice, len(context), len(context + o)) for choice, o in zip(choices, options)]

    async def _echo(self, client: Any, context: str, options: Sequence[str]) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"model": self._model, "prompt": [context + o for o in options], "echo": True,
                                "logprobs": 0, "max_tokens": 0, "temperature": 0.0}
        if self._echo_from:
            body[ECHO_FROM] = len(context)
        return _choices(await self._post(client, "/completions", body), len(options))

    def _echo_refused(self, exc: Exception) -> Exception | None:
        """What a 4xx to a scoring request means: a server that does not take our extension field gets the
        request again without it (None: retry now); otherwise a clear error naming what scoring needs."""
        if self._echo_from and ECHO_FROM in str(exc):
            self._echo_from = False
            return None
        return LMRequestError(f"the LM server at {self.base_url} refused to echo prompt log-probabilities "
                              f"({_short(exc)})", hint="answer=score needs a server that supports echo with "
                              "logprobs on /completions; use answer=generate otherwise")

    def _option_logprob(self, choice: dict[str, Any], start: int, end: int) -> float:
        lp = choice.get("logprobs") or {}
        offsets, values = lp.get("text_offset"), lp.get("token_logprobs")
        if not offsets or not values or len(offsets) < 2:
            raise LMRequestError(f"the LM server at {self.base_url} returned no prompt log-probabilities",
                                 hint="answer=score needs a server that supports echo with logprobs on "
                                      "/completions (vLLM, `llmexplore lm serve --backend transformers`); "
                                      "use answer=generate otherwise")
        # the echoed text's tokens come first; a token that starts inside the option belongs to it
        return sum(float(v) for o, v in zip(offsets, values) if start <= o < end and v is not None)

    async def _one(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        client = await self._slots.get()
        try:
            return await self._attempts(client, prompts, params)
        finally:
            self._slots.put_nowait(client)

    async def _attempts(self, client: Any, prompts: list[str], params: SamplingParams) -> list[Completion]:
        return await self._retrying(lambda: self._request(client, prompts, params))

    async def _retrying(self, call: Callable[[], Awaitable[T]],
                        refused: Callable[[Exception], Exception | None] | None = None) -> T:
        """``call()`` until it answers: transient failures are retried with backoff and jitter; a wrong
        model and an invalid request stop at once (``refused`` may name what a 4xx means, or return None
        to have the call made again at once, e.g. after dropping an optional field)."""
        attempt = 0
        while True:
            try:
                return await call()
            except self._openai.NotFoundError as exc:
                served = await self._served_or_empty()
                raise ModelNotFoundError(f"the LM server at {self.base_url} does not serve model "
                                         f"{self._model!r} ({_short(exc)})",
                                         hint=f"it serves: {', '.join(served) or '(could not list)'}") from None
            except self._openai.APIStatusError as exc:
                status = exc.status_code
                if status < 500 and status not in _RETRY_STATUS:
                    error = refused(exc) if refused is not None else LMRequestError(
                        f"the LM server rejected a request with HTTP {status}: {_short(exc)}",
                        hint="check the model's context length, max_tokens and the API key")
                    if error is None:
                        continue
                    raise error from None
                cause = f"http {status}"
            except self._openai.APITimeoutError:
                cause = "timeout"
            except self._openai.APIConnectionError:
                cause = "connection"
            except (MalformedReply, self._openai.APIResponseValidationError, ValueError, TypeError,
                    AttributeError, KeyError, IndexError):
                cause = "malformed reply"
            if attempt >= self.max_retries:
                raise LMUnavailableError(f"the LM server at {self.base_url} failed {attempt + 1} times in a row "
                                         f"(last: {cause})", hint="check that the server is up and healthy")
            self.retry_counts[cause] = self.retry_counts.get(cause, 0) + 1
            delay = min(self.max_backoff_s, self.backoff_s * 2 ** attempt)
            await asyncio.sleep(delay * (0.5 + self._rng.random() / 2))
            attempt += 1

    async def _served_or_empty(self) -> list[str]:
        try:
            page = await self._client.models.list()
            return [m.id for m in page.data]
        except Exception:
            return []

    def _sampling(self, params: SamplingParams) -> dict[str, Any]:
        kw: dict[str, Any] = dict(temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_tokens)
        if params.stop:
            kw["stop"] = list(params.stop)
        if params.seed is not None:
            kw["seed"] = params.seed
        return kw

    async def _request(self, client: Any, prompts: list[str], params: SamplingParams) -> list[Completion]:
        if self.endpoint == "chat":
            return [await self._chat(client, prompts[0], params)]
        return await self._completions(client, prompts, params)

    async def _post(self, client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST through the client (its timeouts, connection handling and HTTP error types) and read
        the JSON reply ourselves: cheaper than the client's typed models, and strict about garbage."""
        response = await client.post(path, cast_to=self._raw_response, body=body)
        try:
            data = json.loads(response.content)
        except ValueError:
            raise MalformedReply("reply body is not JSON") from None
        if not isinstance(data, dict):
            raise MalformedReply("reply body is not a JSON object")
        return data

    async def _chat(self, client: Any, prompt: str, params: SamplingParams) -> Completion:
        kw = self._sampling(params)
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        if params.logprobs is not None:
            kw.update(logprobs=True, top_logprobs=params.logprobs)
        data = await self._post(client, "/chat/completions", {"model": self._model, "messages": messages, **kw})
        choice = _choices(data, 1)[0]
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content") if params.logprobs is not None else None
        if content is not None:
            logprobs = tuple(TokenLogprob(t["token"], float(t["logprob"]),
                                          {a["token"]: float(a["logprob"]) for a in (t.get("top_logprobs") or [])})
                             for t in content)
        return _completion(choice, choice["message"].get("content"), logprobs)

    async def _completions(self, client: Any, prompts: list[str], params: SamplingParams) -> list[Completion]:
        kw = self._sampling(params)
        if params.logprobs is not None:
            kw["logprobs"] = params.logprobs
        data = await self._post(client, "/completions", {
            "model": self._model, "prompt": prompts if len(prompts) > 1 else prompts[0], **kw})
        out = []
        for choice in _choices(data, len(prompts)):
            logprobs = None
            lp = choice.get("logprobs") if params.logprobs is not None else None
            if lp and lp.get("tokens") is not None:
                tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
                logprobs = tuple(TokenLogprob(tok, float(val), {k: float(v) for k, v in (top or {}).items()})
                                 for tok, val, top in zip(lp["tokens"], lp["token_logprobs"], tops))
            out.append(_completion(choice, choice.get("text"), logprobs))
        return out


def _completion(choice: dict[str, Any], text: Any, logprobs: tuple[TokenLogprob, ...] | None) -> Completion:
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise MalformedReply(f"completion text is {type(text).__name__}")
    return Completion(text, choice.get("finish_reason"), logprobs)


def _choices(data: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The reply's choices in prompt order; exactly one per prompt, or the reply is malformed."""
    choices = data.get("choices")
    if not isinstance(choices, list) or len(choices) != n or not all(isinstance(c, dict) for c in choices):
        raise MalformedReply(f"reply has {len(choices) if isinstance(choices, list) else 'no'} choices for {n} prompts")
    if n > 1:
        choices = sorted(choices, key=lambda c: c.get("index", -1))
        if [c.get("index") for c in choices] != list(range(n)):
            raise MalformedReply("reply's choice indices do not match the prompts")
    return choices


def _response_type() -> type:
    """The HTTP response class the client returns raw (``httpx2`` in openai 3, ``httpx`` before)."""
    try:
        import httpx2

        return httpx2.Response
    except ImportError:  # pragma: no cover - older openai releases
        import httpx

        return httpx.Response


def _short(exc: BaseException | None, limit: int = 200) -> str:
    text = str(exc) if exc is not None else ""
    return text if len(text) <= limit else text[:limit] + "..."
