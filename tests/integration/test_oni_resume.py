"""SIGKILL an ONI-Ranking run and start it again: it resumes with the label table, the caption
reservoir (pair buffer), the labelled pairs and the reward model its last checkpoint held."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import list_checkpoints, load_checkpoint_file
from llmexplore.agents.checkpoints import CHECKPOINT_KEY
from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

ARGS = ["run", "--method", "oni-ranking", "--task", "nethack:score", "--seed", "2", "--steps", "40000",
        "-t", "envs_per_worker=16", "-t", "batch_size=1024", "-t", "save_every_sec=3", "--quiet"]
LOADED = "llmexplore: method state loaded "


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def expected_summary(state: dict) -> dict:
    """What a method resumed from this state must start with, computed from the raw checkpoint data."""
    captions = state["vocabulary"]["captions"]
    labels = state["service"]["labels"]
    reservoir = state["reservoir"]
    return {
        "captions": len(captions),
        "labels": len(labels),
        "pending": len(state["service"]["pending"]),
        "labels_sha256": digest(sorted(json.dumps([list(item), label]) for item, label in labels)),
        "pairs": sum(1 for _, label in labels if label != 3),
        "reservoir": len(reservoir["ids"]),
        "reservoir_seen": reservoir["seen"],
        "reservoir_sha256": digest([json.dumps(captions[i]) for i in reservoir["ids"]]),
        "model_steps": state["model"]["version"],
    }


def checkpoint_state(path: Path) -> dict:
    return load_checkpoint_file(path)[CHECKPOINT_KEY]["method_state"]


def test_sigkill_then_resume_keeps_labels_pairs_and_model(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    try:
        while True:  # wait for a checkpoint whose method has labelled pairs and a trained model
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "no checkpoint with labelled pairs within five minutes"
            found = [p for p in list_checkpoints(out) if not p.name.endswith("_0.pth")]
            if found:
                try:
                    state = checkpoint_state(found[-1])
                except Exception:  # being written
                    state = None
                if state and len(state["service"]["labels"]) >= 10 and state["model"]["version"] > 0:
                    break
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert read_record(out).status == "running"
    kept = list_checkpoints(out)[-1]  # the one the next session loads
    state = checkpoint_state(kept)
    want = expected_summary(state)
    assert want["reservoir"] > 0 and want["pairs"] > 0

    result = subprocess.run([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and [s.status for s in record.sessions] == ["killed", "complete"]

    loaded = [json.loads(line.split(LOADED, 1)[1]) for line in (out / "sf" / "sf_log.txt").read_text().splitlines()
              if LOADED in line]
    assert loaded, "the resumed learner did not report the state it loaded"
    assert loaded[-1] == want

    # and it went on from there: nothing of the old table is lost, the reservoir kept counting
    final = checkpoint_state(list_checkpoints(out)[-1])
    old = {json.dumps([list(i), lab]) for i, lab in state["service"]["labels"]}
    new = {json.dumps([list(i), lab]) for i, lab in final["service"]["labels"]}
    assert old <= new and len(new) > len(old)
    assert final["reservoir"]["seen"] > state["reservoir"]["seen"]
    assert final["model"]["version"] > state["model"]["version"]
    assert final["vocabulary"]["captions"][: want["captions"]] == state["vocabulary"]["captions"]
