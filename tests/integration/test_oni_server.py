"""An ONI run against a real LM server process that is killed and restarted mid-run.

The oracle answers behind ``llmexplore lm serve`` (a subprocess); the run talks to it over
HTTP through the openai backend. At the end every distinct caption the run saw is labelled
exactly once and correctly, although some questions failed while the server was down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import latest_checkpoint, load_checkpoint_file
from llmexplore.agents.checkpoints import CHECKPOINT_KEY
from llmexplore.benchmarks.run.record import read_record
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.oni.questions import OniClassification
from tests.helpers.lm_server import ServerProcess

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def last_metrics(out: Path) -> dict:
    path = out / "metrics.jsonl"
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    return json.loads(lines[-1]) if lines else {}


def test_every_caption_is_labelled_once_although_the_server_restarts(tmp_path):
    server = ServerProcess("--latency", "0.05")
    out = tmp_path / "run"
    args = ["run", "--method", "oni-retrieval", "--task", "nethack:score", "--seed", "1", "--steps", "50000",
            "-t", "envs_per_worker=16", "-t", "batch_size=1024", "--lm", "backend=openai",
            "--lm", f"base_url={server.base_url}", "--lm", f"model={server.model}", "--lm", "timeout_s=5",
            "--lm", "max_retries=1", "--out", str(out), "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "llmexplore", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while last_metrics(out).get("env_steps", 0) < 12_000:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "training did not get going"
            time.sleep(0.5)
        before = last_metrics(out)
        assert before["oni_labels_total"] > 0 and before["oni_backend_errors"] == 0
        server.kill()  # mid-run: new captions keep coming while nobody answers
        time.sleep(6)
        server = ServerProcess("--latency", "0.05", port=server.port)
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.stop()

    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= 50_000
    state = load_checkpoint_file(latest_checkpoint(out))[CHECKPOINT_KEY]["method_state"]
    captions = state["vocabulary"]["captions"]
    service = state["service"]
    labels = {item: label for item, label in service["labels"]}
    counters = service["counters"]
    # the outage was felt: questions failed and were asked again later
    assert counters["backend_errors"] >= 1
    # every distinct caption seen is labelled, nothing is left waiting, and no caption was labelled twice
    assert len(captions) > 100 and set(labels) == set(captions) and len(labels) == len(captions)
    assert service["pending"] == []
    assert counters["labelled"] == len(labels) == counters["queued"]
    assert counters["parse_failures"] == 0
    # and each label is the oracle's answer for that caption
    truth = ask(OracleLM(), OniClassification(), captions, SamplingParams()).labels
    assert [labels[c] for c in captions] == truth
    assert 0 < sum(truth) < len(truth)
    # the metrics the run logged said so too
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(m.get("oni_backend_errors", 0) for m in metrics) >= 1
    assert all(0 <= m["oni_labelled_share"] <= 1 for m in metrics if "oni_labelled_share" in m)
    assert metrics[-1]["oni_labelled_share"] > 0.9
