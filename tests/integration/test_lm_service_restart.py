"""The annotation service keeps working while the LM server is killed and restarted."""

from __future__ import annotations

import time

from llmexplore.lm.backends.openai_backend import OpenAIBackend
from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.lm.service import AnnotationService
from tests.helpers.lm_server import ServerProcess
from tests.helpers.pairs import MESSAGES


def test_server_restart_loses_nothing():
    items = [f"{MESSAGES[i % len(MESSAGES)]} [{i}]" for i in range(300)]
    expected = dict(zip(items, ask(OracleLM(), OniClassification(), items, SamplingParams()).labels))
    server = ServerProcess("--latency", "0.02")
    backend = OpenAIBackend(server.model, server.base_url, timeout_s=1.0, max_retries=2, backoff_s=0.05,
                            max_backoff_s=0.1, concurrency=8)
    service = AnnotationService(CachedLM(backend, LMCache()), OniClassification(), batch_size=20,
                                retry_wait_s=0.05, max_retry_wait_s=0.2)
    try:
        service.start()
        service.submit(items)
        deadline = time.monotonic() + 60
        while service.stats()["labelled"] < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.stats()["labelled"] < 300, "the kill should land mid-run"
        server.kill()  # mid-run, with requests in flight
        time.sleep(1.5)
        down = service.stats()
        assert down["backend_errors"] >= 1 and down["queue_length"] > 0
        server = ServerProcess("--latency", "0.02", port=server.port)
        assert service.wait_idle(120)
        got = dict(service.poll())
        assert got == expected  # every item labelled once, correctly
        stats = service.stats()
        assert stats["labelled"] == 300 and stats["parse_failures"] == 0 and stats["last_error"] is None
    finally:
        service.close()
        backend.close()
        server.stop()
