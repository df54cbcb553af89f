"""An OpenAI-compatible HTTP server in front of any backend (``llmexplore lm serve``).

Serves ``GET /v1/models``, ``POST /v1/completions``, ``POST /v1/chat/completions`` and
``GET /stats``. Concurrent requests are gathered into batches for the backend (one
worker thread), so a slow in-process model sees large batches and many trainers can
share one model and one cache; batches take slices of the waiting requests from the
clients in turn (server_schedule.py), so one huge request cannot hold up the others.
Every field of a request is checked and its size capped (server_requests.py). ``Faults``
make a fraction of completion requests slow, fail with 500 or 429, drop the connection,
or return a garbage body: the client's tests use them to prove that no label is lost or
invented.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Callable

from llmexplore.errors import UserError, require
from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.server_log import RequestLogger
from llmexplore.lm.server_requests import RequestError, RequestLimits, read_echo, read_echo_from, read_request
from llmexplore.lm.server_schedule import FairQueue, Job


@dataclass
class Faults:
    """Fractions of completion requests that misbehave: one draw per request picks at most one fault
    (drop, error, rate limit, garbage, slow, in that order), so the rates add up and must sum to at most 1."""

    slow_rate: float = 0.0
    slow_s: float = 2.0
    error_rate: float = 0.0
    rate_limit_rate: float = 0.0
    drop_rate: float = 0.0
    garbage_rate: float = 0.0
    latency_s: float = 0.0
    seed: int = 0

    def any(self) -> bool:
        """Whether any request may misbehave (a rate above 0); ``latency_s`` delays all and is not a fault."""
        return any((self.slow_rate, self.error_rate, self.rate_limit_rate, self.drop_rate, self.garbage_rate))


class ServerStopping(Exception):
    """The server stops before a request's batch ran or finished."""


#: the batch key of echo jobs: their prompts' log-probabilities, not completions, are computed; their
#: prompts are (text, offset of the first character whose tokens are scored)
PROMPT_LOGPROBS = "prompt-logprobs"


class LMServer:
    def __init__(self, lm: LanguageModel, *, model_name: str | None = None, faults: Faults | None = None,
                 max_batch: int = 256, limits: RequestLimits | None = None):
        self.web = require("aiohttp.web", "lm", "llmexplore lm serve")
        self.limits = limits or RequestLimits()
        self.lm = lm
        self.model_name = model_name or lm.model_id
        self.faults = faults or Faults()
        self.max_batch = max_batch
        self.counters: Counter = Counter()
        self._rng = random.Random(self.faults.seed)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lm-serve")
        self._queue: FairQueue | None = None
        #: set when the server stops: every request still being answered gets 503 at once
        self._stopping: asyncio.Event | None = None
        self._batcher: asyncio.Task | None = None
        self._runner: Any = None
        self.started = time.time()
        #: a backend batch is running in the worker thread (it cannot be interrupted)
        self.busy = False
        self._running: list[Any] = []  # that batch's slices

    # -- app -------------------------------------------------------------------------------
    def app(self) -> Any:
        """The aiohttp application: the routes, the request size cap, quiet client disconnects, and the
        batcher started and stopped with it."""
        web = self.web
        app = web.Application(client_max_size=self.limits.max_bytes,
                              middlewares=[web.middleware(lambda request, handler: self._quiet_disconnects(request, handler))])
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: Any) -> None:
        self._queue = FairQueue()
        self._stopping = asyncio.Event()
        self._batcher = asyncio.create_task(self._batch_loop())

    async def _on_cleanup(self, app: Any) -> None:
        if self._batcher is not None:
            self._batcher.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Start in the running event loop; returns the bound port."""
        web = self.web
        # handlers end at once when stopping (``_serve``): the HTTP server need not wait long for them; a
        # request the HTTP parser refuses (400) is counted, not printed as a traceback (server_log.py)
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=2.0,
                                     logger=RequestLogger(self.counters))
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Answer every waiting request with 503 at once (a running model call cannot be interrupted, and
        the HTTP server would otherwise wait for its requests), then close."""
        if self._stopping is not None:
            self._stopping.set()
        if self._batcher is not None:
            self._batcher.cancel()
        stopping = ServerStopping("the LM server is shutting down")
        for piece in self._running:
            piece.job.fail(stopping)
        if self._queue is not None:
            self._queue.fail_all(stopping)
        await asyncio.sleep(0)  # the waiting handlers write their 503s
        if self._runner is not None:
            await self._runner.cleanup()

    # -- batching --------------------------------------------------------------------------
    async def _batch_loop(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            params, slices = await self._queue.next_batch(self.max_batch)
            prompts = [p for piece in slices for p in piece.prompts()]
            self._running = slices
            self.counters["backend_batches"] += 1
            try:
                if params == PROMPT_LOGPROBS:  # echo jobs' prompts are (text, first character scored)
                    answers = await loop.run_in_executor(self._executor, self._call, self.lm.prompt_logprobs,
                                                         [p for p, _ in prompts], [f for _, f in prompts])
                else:
                    answers = await loop.run_in_executor(self._executor, self._call, self.lm.generate, prompts,
                                                         params)
            except Exception as exc:  # hand the error to every request with a slice in this batch
                for piece in slices:
                    piece.job.fail(exc)
                continue
            start = 0
            for piece in slices:
                size = piece.end - piece.start
                if not piece.job.done():
                    piece.job.fill(piece.start, answers[start:start + size])
                start += size

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a backend call in the worker thread, marking the server busy while it runs."""
        self.busy = True
        try:
            return fn(*args)
        finally:
            self.busy = False

    async def _generate(self, prompts: list[str], params: SamplingParams,
                        client: Any = None) -> list[Completion]:
        assert self._queue is not None
        job = Job(prompts, params, asyncio.get_running_loop().create_future())
        self._queue.put(client, job)
        return await job.future

    # -- handlers --------------------------------------------------------------------------
    async def _models(self, request: Any) -> Any:
        self.counters["models_requests"] += 1
        return self.web.json_response({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": int(self.started), "owned_by": "llmexplore"}]})

    async def _stats(self, request: Any) -> Any:
        stats: dict[str, Any] = dict(self.counters)
        stats["model"] = self.model_name
        stats["faults"] = asdict(self.faults)
        if hasattr(self.lm, "stats"):
            stats["lm"] = self.lm.stats()  # type: ignore[attr-defined]
        return self.web.json_response(stats)

    async def _completions(self, request: Any) -> Any:
        return await self._serve(request, chat=False)

    async def _chat(self, request: Any) -> Any:
        return await self._serve(request, chat=True)

    async def _serve(self, request: Any, chat: bool) -> Any:
        """Answer a completion request, or 503 as soon as the server stops, wherever the request is: reading
        its body, in an injected delay, waiting for a batch or in one."""
        assert self._stopping is not None
        if self._stopping.is_set():
            return self._shutting_down()
        work = asyncio.ensure_future(self._answer(request, chat))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if work.done():
            return work.result()
        work.cancel()  # stopping: its batch slices are dropped (a done or cancelled job is skipped)
        return self._shutting_down()

    def _shutting_down(self) -> Any:
        self.counters["http_503"] += 1
        return self._error(503, "the LM server is shutting down: retry against another server or later",
                           "server_shutting_down")

    async def _quiet_disconnects(self, request: Any, handler: Any) -> Any:
        """A client that goes away mid-request (closed socket, truncated body) is counted, not a traceback on
        the console: nobody is left to read an answer."""
        try:
            return await handler(request)
        except ConnectionError:  # aiohttp's "Connection lost" (ClientConnectionResetError) is one
            self.counters["client_disconnects"] += 1
            return self.web.Response(status=400, text="client disconnected")

    async def _answer(self, request: Any, chat: bool) -> Any:
        self.counters["requests"] += 1
        too_large = (f"the request body is larger than this server takes ({self.limits.max_bytes} bytes): "
                     "send fewer or shorter prompts per request")
        if request.content_length is not None and request.content_length > self.limits.max_bytes:
            self.counters["http_413"] += 1
            return self._error(413, too_large, "request_too_large")
        try:
            body = await request.json()
        except self.web.HTTPRequestEntityTooLarge:
            self.counters["http_413"] += 1
            return self._error(413, too_large, "request_too_large")
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.counters["http_400"] += 1
            return self._error(400, "request body is not JSON")
        fault = await self._inject(request)
        if fault is not None:
            return fault
        try:
            prompts, params = read_request(body, chat, self.model_name, self.limits)
            echo, generate = read_echo(body, chat)
            echo_from = read_echo_from(body, echo)
        except RequestError as exc:
            self.counters[f"http_{exc.status}"] += 1
            return self._error(exc.status, str(exc), exc.code)
        if echo and params.logprobs is not None and not self.lm.supports_prompt_logprobs:
            self.counters["http_400"] += 1
            return self._error(400, f"this server's backend ({self.lm.name}) cannot compute prompt "
                                    "log-probabilities: ask without `logprobs`, or serve the transformers backend")
        echoed: list[Any] | None = None
        try:
            if echo and params.logprobs is not None:  # batched with other clients' echo requests
                echoed = await self._generate([(p, echo_from) for p in prompts],  # type: ignore[arg-type]
                                              PROMPT_LOGPROBS, _client_of(request))  # type: ignore[arg-type]
            if generate:
                answers = await self._generate(prompts, params, _client_of(request))
            else:
                answers = [Completion("", "length", ()) for _ in prompts]
        except ServerStopping:
            return self._shutting_down()
        except UserError as exc:
            self.counters["backend_errors"] += 1
            return self._error(400, str(exc))
        except Exception as exc:  # the backend failed: report a server error, the client retries
            self.counters["backend_errors"] += 1
            return self._error(500, f"backend failed: {type(exc).__name__}: {exc}", "server_error")
        self.counters["prompts"] += len(prompts)
        self.counters["completed"] += 1
        self.counters["echoed_prompts"] += len(prompts) if echo else 0
        self.counters["echo_from_prompts"] += len(prompts) if echo and echo_from else 0
        reply = _reply(self.model_name, answers, chat, params)
        if echo:
            _add_echo(reply, prompts, echoed)
        return self.web.json_response(reply)

    async def _inject(self, request: Any) -> Any:
        f = self.faults
        if f.latency_s:
            await asyncio.sleep(f.latency_s)
        if not f.any():
            return None
        r = self._rng.random()
        for kind, rate in (("drop", f.drop_rate), ("error", f.error_rate), ("rate_limit", f.rate_limit_rate),
                           ("garbage", f.garbage_rate), ("slow", f.slow_rate)):
            if r < rate:
                break
            r -= rate
        else:
            return None
        self.counters[f"fault_{kind}"] += 1
        if kind == "drop":
            request.transport.abort()  # the client sees the connection close with no reply
            raise asyncio.CancelledError
        if kind == "error":
            return self._error(500, "injected server error", "server_error")
        if kind == "rate_limit":
            return self._error(429, "injected rate limit", "rate_limit_exceeded")
        if kind == "garbage":
            variant = self._rng.randrange(3)
            if variant == 0:
                return self.web.Response(text='{"id": "cmpl-1", "choices": [{"text": "Prefer', status=200,
                                         content_type="application/json")
            if variant == 1:
                return self.web.Response(text="<html><body>502 upstream hiccup</body></html>", status=200,
                                         content_type="text/html")
            return self.web.json_response({"object": "banana", "result": "not a completion"})
        await asyncio.sleep(f.slow_s)  # slow: answer late (the client may have given up)
        return None

    def _error(self, status: int, message: str, code: str = "invalid_request_error") -> Any:
        return self.web.json_response({"error": {"message": message, "type": code, "code": code}}, status=status)


def _client_of(request: Any) -> Any:
    """Who a request comes from, for fair turns: its connection (address and port)."""
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return tuple(peer[:2]) if isinstance(peer, tuple) else request.remote


def _reply(model: str, answers: list[Completion], chat: bool, params: SamplingParams) -> dict[str, Any]:
    now = int(time.time())
    choices = []
    tokens = 0
    for i, c in enumerate(answers):
        tokens += len(c.text.split())
        if chat:
            choice: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": c.text},
                                      "finish_reason": c.finish_reason or "stop"}
            if params.logprobs is not None and c.logprobs is not None:
                choice["logprobs"] = {"content": [
                    {"token": t.token, "logprob": t.logprob, "bytes": None,
                     "top_logprobs": [{"token": k, "logprob": v, "bytes": None} for k, v in t.top.items()]}
                    for t in c.logprobs]}
            else:
                choice["logprobs"] = None
        else:
            choice = {"index": i, "text": c.text, "finish_reason": c.finish_reason or "stop", "logprobs": None}
            if params.logprobs is not None and c.logprobs is not None:
                offsets = [0]
                for t in c.logprobs[:-1]:
                    offsets.append(offsets[-1] + len(t.token))
                choice["logprobs"] = {"tokens": [t.token for t in c.logprobs],
                                      "token_logprobs": [t.logprob for t in c.logprobs],
                                      "top_logprobs": [dict(t.top) for t in c.logprobs],
                                      "text_offset": offsets[:len(c.logprobs)]}
        choices.append(choice)
    return {"id": f"{'chatcmpl' if chat else 'cmpl'}-{now}", "object": "chat.completion" if chat else "text_completion",
            "created": now, "model": model, "choices": choices,
            "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}}


def _add_echo(reply: dict[str, Any], prompts: list[str], echoed: list[Any] | None) -> None:
    """Put each prompt before its answer, and its tokens' log-probabilities before the answer's."""
    for choice, prompt, tokens in zip(reply["choices"], prompts, echoed or [None] * len(prompts)):
        choice["text"] = prompt + choice["text"]
        if tokens is None or choice.get("logprobs") is None:
            continue
        lp = choice["logprobs"]
        lp["tokens"] = [t for t, _, _ in tokens] + lp["tokens"]
        lp["token_logprobs"] = [v for _, _, v in tokens] + lp["token_logprobs"]
        lp["top_logprobs"] = [None] + [{} for _ in tokens[1:]] + lp["top_logprobs"]
        lp["text_offset"] = [o for _, o, _ in tokens] + [len(prompt) + o for o in lp["text_offset"]]


def serve_forever(server: LMServer, host: str, port: int, on_ready: Callable[[int], None] | None = None) -> None:
    """Run until interrupted (Ctrl-C or SIGTERM): then every waiting request gets 503 and the server
    exits. A second signal while it stops ends the process at once: a stop is never ignored."""
    import os
    import signal
    import sys

    signals = (signal.SIGINT, signal.SIGTERM)

    async def main() -> None:
        bound = await server.start(host, port)
        if on_ready is not None:
            on_ready(bound)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def now(signum: int) -> None:
            print(f"llmexplore lm serve: {signal.Signals(signum).name} again: stopping now", file=sys.stderr,
                  flush=True)
            os._exit(128 + signum)

        def first(signum: int) -> None:
            stop.set()
            for sig in signals:
                loop.add_signal_handler(sig, now, sig)

        for sig in signals:
            try:
                loop.add_signal_handler(sig, first, sig)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread
                pass
        await stop.wait()
        await server.stop()

    asyncio.run(main())
