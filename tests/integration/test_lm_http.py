"""The openai backend against a real local HTTP server (``llmexplore lm serve``), faults included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmexplore.cli import main
from llmexplore.lm.backends.openai_backend import OpenAIBackend
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.errors import LMUnavailableError, ModelNotFoundError
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import EllmGoals
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from tests.helpers.lm_server import ServerProcess
from tests.helpers.pairs import MESSAGES, make_dataset, make_pairs

P = SamplingParams()
FAULTS = ["--error-rate", "0.1", "--rate-limit-rate", "0.05", "--drop-rate", "0.1", "--garbage-rate", "0.1",
          "--slow-rate", "0.05", "--slow-seconds", "2"]


@pytest.fixture(scope="module")
def faulty_server():
    with ServerProcess(*FAULTS) as server:
        yield server


@pytest.fixture(scope="module")
def clean_server():
    with ServerProcess() as server:
        yield server


@pytest.mark.parametrize("endpoint", ["chat", "completion"])
def test_no_label_lost_or_invented_under_faults(faulty_server, endpoint):
    pairs = [(a, b) for a, b in make_pairs(150, seed=4) if a != b]
    question = MotifPreference("combat")
    expected = ask(OracleLM(), question, pairs, P).labels
    backend = OpenAIBackend(faulty_server.model, faulty_server.base_url, endpoint=endpoint, timeout_s=0.5,
                            backoff_s=0.02, max_backoff_s=0.2, max_retries=20, concurrency=16)
    before = faulty_server.stats()
    try:
        result = ask(backend, question, pairs, P)
    finally:
        backend.close()
    after = faulty_server.stats()
    assert result.labels == expected and result.unknown == 0 and result.retried == 0
    # every kind of fault happened, and each one cost the client one retried attempt
    kinds = ("drop", "error", "rate_limit", "garbage", "slow")
    injected = {k: after.get(f"fault_{k}", 0) - before.get(f"fault_{k}", 0) for k in kinds}
    assert all(n > 0 for n in injected.values()), injected
    assert sum(backend.retry_counts.values()) >= sum(injected.values())
    assert {"malformed reply", "http 500", "http 429"} <= set(backend.retry_counts)
    # a dropped connection surfaces as a connection error or (through the aiohttp transport) a timeout
    assert backend.retry_counts.get("timeout", 0) + backend.retry_counts.get("connection", 0) >= (
        injected["drop"] + injected["slow"])


def test_other_question_kinds_and_logprobs_over_http(clean_server):
    backend = OpenAIBackend(None, clean_server.base_url)  # the only model served is picked
    try:
        assert backend.model_id == clean_server.model
        local = OracleLM()
        for question, items in ((OniClassification(), MESSAGES[:8]),
                                (EllmGoals(), ["You see grass, tree, water.", "You see sand."])):
            assert ask(backend, question, items, P).labels == ask(local, question, items, P).labels
        out = backend.generate([MotifPreference().prompt(("a", "b"))], SamplingParams(logprobs=2))[0]
        assert "".join(t.token for t in out.logprobs) == out.text and out.logprobs[0].top
    finally:
        backend.close()


def test_wrong_model_lists_what_the_server_has(clean_server):
    with pytest.raises(ModelNotFoundError, match="does not serve model 'llama-9000'") as err:
        OpenAIBackend("llama-9000", clean_server.base_url)
    assert clean_server.model in str(err.value)


def test_unreachable_server_is_one_clear_error(tmp_path: Path, capsys):
    with pytest.raises(LMUnavailableError, match="cannot reach the LM server"):
        OpenAIBackend("m", "http://127.0.0.1:9/v1")
    make_dataset(tmp_path / "ds", make_pairs(4))
    code = main(["lm", "annotate", str(tmp_path / "ds"), "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                 "--model", "m", "--cache", ":memory:", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach the LM server at http://127.0.0.1:9/v1" in err and "Traceback" not in err


def test_cli_annotate_over_http_matches_the_embedded_oracle(faulty_server, tmp_path: Path, capsys):
    pairs = make_pairs(120, seed=5)
    make_dataset(tmp_path / "http", pairs)
    make_dataset(tmp_path / "local", pairs)
    assert main(["lm", "annotate", str(tmp_path / "http"), "--backend", "openai", "--base-url", faulty_server.base_url,
                 "--model", faulty_server.model, "--annotator", "a", "--quiet", "--batch-size", "32",
                 "--lm", "timeout_s=0.5", "--lm", "max_retries=20", "--lm", "options.backoff_s=0.02",
                 "--lm", "options.max_backoff_s=0.2"]) == 0
    http_report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["lm", "annotate", str(tmp_path / "local"), "--annotator", "a", "--quiet"]) == 0
    name = "preference/a_msg_defaultgoal_default.npy"
    assert np.array_equal(np.load(tmp_path / "http" / name), np.load(tmp_path / "local" / name))
    assert http_report["counts"]["unknown"] == 0
    assert (tmp_path / "http" / "lm-cache.sqlite3").is_file()  # default cache sits beside the dataset


def test_serve_on_a_busy_port_exits_2(clean_server):
    import subprocess
    import sys

    from tests.helpers.lm_server import REPO

    proc = subprocess.run([sys.executable, "-m", "llmexplore", "lm", "serve", "--port", str(clean_server.port),
                           "--cache", ":memory:"], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{clean_server.port}" in proc.stderr


def test_answers_of_a_failed_batch_are_kept_and_never_asked_again(tmp_path: Path):
    from llmexplore.lm.cache import CachedLM, LMCache

    question = OniClassification()
    items = [f"{m} <{i}>" for i, m in enumerate(MESSAGES * 4)]
    with ServerProcess("--error-rate", "0.3", "--fault-seed", "3") as server:
        backend = OpenAIBackend(server.model, server.base_url, max_retries=0, concurrency=8)
        lm = CachedLM(backend, LMCache(tmp_path / "c.sqlite3"))
        failures = 0
        for _ in range(50):
            try:
                labels = ask(lm, question, items, P).labels
                break
            except LMUnavailableError:
                failures += 1
        lm.close()
        stats = server.stats()
    assert failures > 0
    assert labels == ask(OracleLM(), question, items, P).labels
    # every prompt the server answered is answered once: failed batches lost nothing
    assert stats["prompts"] == len(items) == lm.cache.counters.stored


class StrictEchoServer:
    """A third-party-like server on a real port: it echoes prompts with one token per character (log-probability
    -1 each, the first None) and refuses fields it does not know, as OpenAI's API does."""

    def __init__(self) -> None:
        import asyncio
        import threading

        from aiohttp import web

        self.bodies: list[dict] = []
        app = web.Application()
        app.router.add_get("/v1/models", lambda r: web.json_response({"object": "list", "data": [
            {"id": "strict", "object": "model", "owned_by": "someone"}]}))
        app.router.add_post("/v1/completions", self._completions)
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    async def _completions(self, request):
        from aiohttp import web

        body = await request.json()
        self.bodies.append(body)
        unknown = sorted(set(body) - {"model", "prompt", "echo", "logprobs", "max_tokens", "temperature"})
        if unknown:
            return web.json_response({"error": {"message": f"Unrecognized request argument supplied: {unknown[0]}",
                                                "type": "invalid_request_error"}}, status=400)
        choices = [{"index": i, "text": p, "finish_reason": "length",
                    "logprobs": {"tokens": list(p), "token_logprobs": [None] + [-1.0] * (len(p) - 1),
                                 "top_logprobs": [None] * len(p), "text_offset": list(range(len(p)))}}
                   for i, p in enumerate(body["prompt"])]
        return web.json_response({"id": "x", "object": "text_completion", "choices": choices})

    def close(self) -> None:
        import asyncio

        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def test_scoring_asks_again_without_the_extension_a_server_refuses():
    """Scoring requests carry `echo_logprobs_from` (our server then scores only the options); a server that
    refuses the field gets the same request without it, and later requests leave it out."""
    server = StrictEchoServer()
    try:
        lm = OpenAIBackend("strict", server.base_url, endpoint="completion")
        try:
            assert lm.score(["Which?"], "Preferred:", [" 1", " 22"]) == [[-2.0, -3.0]]
            assert lm.score(["Again?"], "Preferred:", [" 333"]) == [[-4.0]]
        finally:
            lm.close()
    finally:
        server.close()
    assert ["echo_logprobs_from" in b for b in server.bodies] == [True, False, False]
    assert server.bodies[0]["echo_logprobs_from"] == len("Which?\nPreferred:")
