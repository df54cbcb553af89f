"""Killing a run with SIGKILL and starting it again resumes from its last checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import list_checkpoints
from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

ARGS = ["run", "--method", "rnd", "--task", "nethack:score", "--seed", "3", "--steps", "60000", "-t",
        "save_every_sec=2", "--quiet"]


def test_sigkill_then_rerun_resumes_with_one_consistent_record(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        found = [p for p in list_checkpoints(out) if not p.name.endswith("_0.pth")]
        if found:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("no checkpoint within two minutes")
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = read_record(out)
    assert killed.status == "running"

    result = subprocess.run([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= 60000
    statuses = [s.status for s in record.sessions]
    assert statuses == ["killed", "complete"]
    resumed_from = record.sessions[1].env_steps_start
    assert resumed_from > 0
    log = (out / "sf" / "sf_log.txt").read_text()
    assert f"env_steps={resumed_from}" in log  # sample-factory loaded that checkpoint
    steps = [json.loads(line)["env_steps"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert steps == sorted(steps), "episodes out of order: something was logged twice"
