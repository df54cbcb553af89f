"""Two reward streams (``-t reward_streams=2``) train and resume on RND and E3B (issue 51): a run of two
batches, extended by two more from its checkpoint, keeps its intrinsic value head and the running statistics
of the intrinsic return across the resume, and its checkpoint loads for evaluation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmexplore.agents.checkpoints import list_checkpoints
from llmexplore.agents.learner import STREAMS_KEY
from llmexplore.agents.policy import load_policy
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.reward_streams import INTRINSIC_HEAD
from llmexplore.benchmarks.run.record import read_record

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BATCH = 1024  # Crafter's default: 16 envs x 32-step rollouts, twice over


def llmexplore(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "llmexplore", *args, "--quiet"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _returns_counted(run_dir: Path) -> float:
    """How many intrinsic returns the newest checkpoint's normalisation has counted."""
    data = torch.load(list_checkpoints(run_dir)[-1], map_location="cpu", weights_only=False)
    assert f"{INTRINSIC_HEAD}.weight" in data["model"]
    return float(data["llmexplore"][STREAMS_KEY]["stats"]["count"])


@pytest.mark.parametrize("method", ["rnd", "e3b"])
def test_two_streams_train_and_resume(method, tmp_path):
    run_dir = tmp_path / method
    llmexplore("run", "--method", method, "--task", "crafter:reward-free", "--seed", "2", "--steps",
               str(2 * BATCH), "-t", "reward_streams=2", "--out", str(run_dir))
    assert ResolvedRun.read(run_dir).train.reward_streams == 2
    assert _returns_counted(run_dir) == pytest.approx(2 * BATCH, abs=1e-3)

    resumed = llmexplore("run", "--out", str(run_dir), "--steps", str(4 * BATCH))
    assert "resuming from checkpoint_" in resumed.stderr
    record = read_record(run_dir)
    assert [(s.env_steps_start, s.env_steps_end, s.status) for s in record.sessions] == \
        [(0, 2 * BATCH, "complete"), (2 * BATCH, 4 * BATCH, "complete")]
    # the statistics went on from the checkpoint's: a resume that started them afresh would count 2 batches
    assert _returns_counted(run_dir) == pytest.approx(4 * BATCH, abs=1e-3)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["env_steps"] for row in rows] == [BATCH, 2 * BATCH, 3 * BATCH, 4 * BATCH]
    assert all(row["intrinsic_return_std"] > 0 for row in rows)
    policy = load_policy(run_dir)  # evaluation builds the two-headed network the checkpoint holds
    assert hasattr(policy.model, INTRINSIC_HEAD)
