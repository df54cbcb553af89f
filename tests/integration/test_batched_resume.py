"""A run on the batched sampling path (issue 54), stopped (SIGTERM) and killed (SIGKILL) and resumed each time,
repeats no episode and loses none: its logs through each resume point are an uninterrupted run's, row for
row, and every episode row has its intrinsic row under the same trained batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import list_checkpoints
from llmexplore.benchmarks.run.record import read_record
from tests.helpers.run_logs import check_run_folder, rows_through

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUDGET, BATCH = 16384, 512
RUN = ["run", "--method", "rnd", "--task", "nethack:score", "--seed", "7", "--steps", str(BUDGET),
       "-t", "sampling=batched", "-t", "envs_per_worker=8", "-t", f"batch_size={BATCH}", "-t", "save_every_sec=1",
       "--quiet"]


def _start(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "llmexplore", *RUN, "--out", str(out)],
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _interrupt_after_a_checkpoint(out: Path, sig: signal.Signals, past: int) -> None:
    """Start the run, wait for a checkpoint past ``past`` env steps and for more episodes, then send ``sig``."""
    proc = _start(out)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        steps = [int(p.stem.split("_")[-1]) for p in list_checkpoints(out)]
        if any(s > past for s in steps) and (out / "episodes.jsonl").exists():
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"no checkpoint past {past} env steps within four minutes: {proc.communicate()[1][-2000:]}")
    time.sleep(1.0)
    os.killpg(proc.pid, sig)
    proc.wait(120)


def test_a_batched_run_stopped_and_killed_repeats_no_episode_and_loses_none(tmp_path):
    reference, run = tmp_path / "reference", tmp_path / "interrupted"
    done = subprocess.run([sys.executable, "-m", "llmexplore", *RUN, "--out", str(reference)],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    ref = check_run_folder(reference, BUDGET, BATCH)
    assert read_record(reference).spec.sampling == "batched"

    _interrupt_after_a_checkpoint(run, signal.SIGTERM, past=0)
    first_stop = read_record(run).sessions[-1].env_steps_end
    _interrupt_after_a_checkpoint(run, signal.SIGKILL, past=first_stop)
    final = _start(run)
    assert final.wait(900) == 0, final.communicate()[1][-3000:]

    rows = check_run_folder(run, BUDGET, BATCH)  # steps never go back; episode and intrinsic rows agree
    record = read_record(run)
    assert [s.status for s in record.sessions] == ["interrupted", "killed", "complete"]
    resumed_at = [s.env_steps_start for s in record.sessions[1:]]
    assert 0 < resumed_at[0] < resumed_at[1] < BUDGET
    for name in ("episodes.jsonl", "intrinsic.jsonl"):
        # through the first resume point the logs are the uninterrupted run's: nothing repeated, nothing lost
        assert rows_through(rows[name], resumed_at[0]) == rows_through(ref[name], resumed_at[0]), name
    assert len(rows["episodes.jsonl"]) >= len(rows_through(ref["episodes.jsonl"], resumed_at[0])) > 0
