"""An OpenAI-compatible HTTP server in front of any backend (``llmexplore lm serve``).

Serves ``GET /v1/models``, ``POST /v1/completions``, ``POST /v1/chat/completions`` and
``GET /stats``. Concurrent requests are gathered into batches for the backend (one
worker thread), so a slow in-process model sees large batches and many trainers can
share one model and one cache. ``Faults`` make a fraction of completion requests slow,
fail with 500 or 429, drop the connection, or return a garbage body: the client's
tests use them to prove that no label is lost or invented.
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


@dataclass
class Faults:
    """Fractions of completion requests that misbehave (drawn independently per request)."""

    slow_rate: float = 0.0
    slow_s: float = 2.0
    error_rate: float = 0.0
    rate_limit_rate: float = 0.0
    drop_rate: float = 0.0
    garbage_rate: float = 0.0
    latency_s: float = 0.0
    seed: int = 0

    def any(self) -> bool:
        return any((self.slow_rate, self.error_rate, self.rate_limit_rate, self.drop_rate, self.garbage_rate))


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.code = status, code


class LMServer:
    def __init__(self, lm: LanguageModel, *, model_name: str | None = None, faults: Faults | None = None,
                 max_batch: int = 256):
        self.web = require("aiohttp.web", "lm", "llmexplore lm serve")
        self.lm = lm
        self.model_name = model_name or lm.model_id
        self.faults = faults or Faults()
        self.max_batch = max_batch
        self.counters: Counter = Counter()
        self._rng = random.Random(self.faults.seed)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lm-serve")
        self._queue: asyncio.Queue | None = None
        self._batcher: asyncio.Task | None = None
        self._runner: Any = None
        self.started = time.time()

    # -- app -------------------------------------------------------------------------------
    def app(self) -> Any:
        web = self.web
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: Any) -> None:
        self._queue = asyncio.Queue()
        self._batcher = asyncio.create_task(self._batch_loop())

    async def _on_cleanup(self, app: Any) -> None:
        if self._batcher is not None:
            self._batcher.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Start in the running event loop; returns the bound port."""
        web = self.web
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- batching --------------------------------------------------------------------------
    async def _batch_loop(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            items = [await self._queue.get()]
            count = len(items[0][0])
            while not self._queue.empty() and count < self.max_batch:
                item = self._queue.get_nowait()
                items.append(item)
                count += len(item[0])
            groups: dict[SamplingParams, list[tuple[list[str], SamplingParams, asyncio.Future]]] = {}
            for item in items:
                groups.setdefault(item[1], []).append(item)
            for params, group in groups.items():
                prompts = [p for g in group for p in g[0]]
                self.counters["backend_batches"] += 1
                try:
                    answers = await loop.run_in_executor(self._executor, self.lm.generate, prompts, params)
                except Exception as exc:  # hand the error to every waiting request
                    for _, _, fut in group:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                start = 0
                for ps, _, fut in group:
                    if not fut.done():
                        fut.set_result(answers[start:start + len(ps)])
                    start += len(ps)

    async def _generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        assert self._queue is not None
        fut = asyncio.get_running_loop().create_future()
        await self._queue.put((prompts, params, fut))
        return await fut

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
        self.counters["requests"] += 1
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._error(400, "request body is not JSON")
        fault = await self._inject(request)
        if fault is not None:
            return fault
        try:
            if not isinstance(body, dict):
                raise _BadRequest(400, "request body must be a JSON object")
            if body.get("model") != self.model_name:
                raise _BadRequest(404, f"The model `{body.get('model')}` does not exist.", "model_not_found")
            prompts = _chat_prompts(body) if chat else _completion_prompts(body)
            params = _params(body)
        except _BadRequest as exc:
            self.counters[f"http_{exc.status}"] += 1
            return self._error(exc.status, str(exc), exc.code)
        try:
            answers = await self._generate(prompts, params)
        except UserError as exc:
            self.counters["backend_errors"] += 1
            return self._error(400, str(exc))
        except Exception as exc:  # the backend failed: report a server error, the client retries
            self.counters["backend_errors"] += 1
            return self._error(500, f"backend failed: {type(exc).__name__}: {exc}", "server_error")
        self.counters["prompts"] += len(prompts)
        self.counters["completed"] += 1
        return self.web.json_response(_reply(self.model_name, answers, chat, params))

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


def _completion_prompts(body: dict[str, Any]) -> list[str]:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    raise _BadRequest(400, "`prompt` must be a string or a list of strings")


def _chat_prompts(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest(400, "`messages` must be a non-empty list")
    parts = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise _BadRequest(400, "every message needs text `content`")
        parts.append(content)
    return ["\n\n".join(parts)]


def _params(body: dict[str, Any]) -> SamplingParams:
    stop = body.get("stop") or ()
    if isinstance(stop, str):
        stop = (stop,)
    logprobs: int | None = None
    if body.get("logprobs") is True:  # chat style
        logprobs = int(body.get("top_logprobs") or 0)
    elif isinstance(body.get("logprobs"), int) and body.get("logprobs") is not False:  # completion style
        logprobs = int(body["logprobs"])
    try:
        return SamplingParams(temperature=body.get("temperature", 1.0), top_p=body.get("top_p", 1.0),
                              max_tokens=body.get("max_tokens") or body.get("max_completion_tokens") or 512,
                              stop=tuple(stop), seed=body.get("seed"), logprobs=logprobs)
    except Exception as exc:
        raise _BadRequest(400, f"invalid sampling parameters: {exc}") from None


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
                choice["logprobs"] = {"tokens": [t.token for t in c.logprobs],
                                      "token_logprobs": [t.logprob for t in c.logprobs],
                                      "top_logprobs": [dict(t.top) for t in c.logprobs],
                                      "text_offset": None}
        choices.append(choice)
    return {"id": f"{'chatcmpl' if chat else 'cmpl'}-{now}", "object": "chat.completion" if chat else "text_completion",
            "created": now, "model": model, "choices": choices,
            "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}}


def serve_forever(server: LMServer, host: str, port: int, on_ready: Callable[[int], None] | None = None) -> None:
    """Run until interrupted (Ctrl-C or SIGTERM)."""
    import signal

    async def main() -> None:
        bound = await server.start(host, port)
        if on_ready is not None:
            on_ready(bound)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread
                pass
        await stop.wait()
        await server.stop()

    asyncio.run(main())
