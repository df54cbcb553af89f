"""Stopping, killing and racing runs (issue 28): nothing is lost, nothing runs twice, nothing is orphaned.

* SIGINT or SIGTERM before the first periodic save (60 s) writes a checkpoint and the record says
  ``interrupted``; the rerun resumes from that checkpoint and keeps the interrupted session.
* A second writer on a run folder is refused with the holder's PID and host.
* A truncated newest checkpoint is skipped (kept aside, named on the console) and the run resumes
  from the one before it.
* A cell dies with its grid runner, even when the runner is SIGKILLed, and leaves a checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import checkpoint_env_steps, list_checkpoints
from llmexplore.benchmarks.run.record import read_record
from llmexplore.benchmarks.run.lock import LOCK_FILE

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

#: the default save_every_sec (60 s) stays: the stop itself must write the checkpoint
ARGS = ["run", "--method", "none", "--task", "nethack:score", "--seed", "5", "--steps", "200000", "-t",
        "envs_per_worker=8", "-t", "batch_size=512", "--quiet"]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _start(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_stepping(out: Path, proc: subprocess.Popen | None = None, timeout: float = 240) -> None:
    """Until this session's heartbeat shows training steps."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the run ended early: {proc.stderr.read()[-2000:]}")
        try:
            session = read_record(out).sessions[-1]
            if session.status == "running" and session.env_steps_end > session.env_steps_start:
                return
        except Exception:
            pass
        time.sleep(0.3)
    pytest.fail("the run did not start training in time")


def _stop(proc: subprocess.Popen, sig: int) -> tuple[float, str]:
    started = time.time()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return time.time() - started, err


def test_signals_checkpoint_a_second_writer_is_refused_and_resume_skips_a_truncated_checkpoint(tmp_path):
    out = tmp_path / "run"
    proc = _start(out)
    _wait_stepping(out, proc)
    assert not [p for p in list_checkpoints(out) if checkpoint_env_steps(p) > 0]  # no periodic save yet

    second = subprocess.run([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)], env=_env(),
                            capture_output=True, text=True, timeout=180)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert f"in use by process {proc.pid} on host {socket.gethostname()}" in second.stderr
    assert json.loads((out / LOCK_FILE).read_text())["pid"] == proc.pid

    seconds, err = _stop(proc, signal.SIGINT)
    assert proc.returncode == 1 and seconds < 60, err[-2000:]
    first = read_record(out)
    assert first.status == "interrupted"
    saved = [p for p in list_checkpoints(out) if checkpoint_env_steps(p) > 0]
    assert saved and checkpoint_env_steps(saved[-1]) == first.env_steps > 0

    # the newest checkpoint is cut short: the rerun skips it and says so
    good = saved[-1]
    data = good.read_bytes()
    bad = good.with_name(f"checkpoint_{999999999:09d}_{first.env_steps + 1}.pth")
    bad.write_bytes(data[: len(data) // 2])
    proc = _start(out)
    _wait_stepping(out, proc)
    seconds, err = _stop(proc, signal.SIGTERM)
    assert proc.returncode == 1 and seconds < 60, err[-2000:]
    assert f"skipped unreadable checkpoint {bad.name}" in err and f"resuming from {good.name}" in err
    assert (bad.parent / f"unreadable-{bad.name}").exists() and not bad.exists()
    record = read_record(out)
    assert [s.status for s in record.sessions] == ["interrupted", "interrupted"]
    assert record.sessions[1].env_steps_start == first.env_steps  # resumed from the interrupted save
    assert record.env_steps > first.env_steps
    steps = [json.loads(line)["env_steps"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert steps == sorted(steps)


def test_a_cell_dies_with_its_grid_runner_and_leaves_a_checkpoint(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(textwrap.dedent("""
        name: orphan
        defaults:
          train: {envs_per_worker: 8, batch_size: 512}
        blocks:
          - vary: {method: [none], seed: [0]}
            tied:
              - {task: nethack:score, steps: 200000}
    """).lstrip())
    out = tmp_path / "grid"
    runner = subprocess.Popen([sys.executable, "-m", "llmexplore", "grid", str(grid), "--out", str(out),
                               "--quiet"], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    run_dir = None
    while time.time() < deadline and run_dir is None:
        found = list((out / "runs").rglob("run.json")) if (out / "runs").exists() else []
        run_dir = found[0].parent if found else None
        time.sleep(0.3)
    assert run_dir is not None, "the cell never started"
    _wait_stepping(run_dir)
    cell_pid = json.loads((run_dir / LOCK_FILE).read_text())["pid"]
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    deadline = time.time() + 90
    while time.time() < deadline and _alive(cell_pid):
        time.sleep(0.3)
    assert not _alive(cell_pid), "the cell outlived its grid runner"
    record = read_record(run_dir)
    assert record.status == "interrupted"
    assert [p for p in list_checkpoints(run_dir) if checkpoint_env_steps(p) > 0]


def _alive(pid: int) -> bool:
    try:
        state = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return state != "Z"


SHORT = [*ARGS[:ARGS.index("--steps")], "--steps", "4096", *ARGS[ARGS.index("--steps") + 2:]]


def test_a_sigterm_during_start_up_is_one_line_and_the_rerun_goes_on(tmp_path):
    """A scheduler's SIGTERM (or a dead launcher's) before training begins stops the run at once: one line,
    the signal's exit code, no traceback; the same command then trains the run to its end."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "llmexplore", *SHORT, "--out", str(out)]
    proc = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120  # until sample-factory starts (its folder), while it spawns its processes
    while time.time() < deadline and not (out / "sf").exists() and proc.poll() is None:
        time.sleep(0.05)
    _, err = _stop(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Traceback" not in err and "llmexplore run: stopped by SIGTERM before it finished" in err, err[-3000:]
    rerun = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert read_record(out).status == "complete"
