"""metrics.jsonl is a function of the command, not of the machine's speed: the same short run, once
on an idle CPU and once with the CPU busy, writes rows at the same env steps, the last at the budget;
a run stopped with Ctrl-C ends its rows where its checkpoint is."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import checkpoint_env_steps, list_checkpoints
from tests.integration.test_one_cell import REPO, run_cli

pytestmark = pytest.mark.slow
BUDGET = 4096
COMMAND = ["run", "--method", "rnd", "--task", "nethack:score", "--seed", "3",
           "-t", "envs_per_worker=16", "-t", "batch_size=1024", "-t", "metrics_every_steps=1500", "--quiet"]


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def metric_steps(out: Path) -> list[int]:
    return [json.loads(line)["env_steps"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_rows_follow_env_steps_on_an_idle_and_a_busy_cpu(tmp_path):
    idle = run_cli(*COMMAND, "--steps", str(BUDGET), "--out", str(tmp_path / "idle"))
    assert idle.returncode == 0, idle.stderr[-3000:]
    burners = [multiprocessing.Process(target=_spin, args=(600.0,), daemon=True) for _ in range(3)]
    for burner in burners:
        burner.start()
    try:
        busy = run_cli(*COMMAND, "--steps", str(BUDGET), "--out", str(tmp_path / "busy"))
    finally:
        for burner in burners:
            burner.terminate()
    assert busy.returncode == 0, busy.stderr[-3000:]
    # rows at the first batch past 1500, 3000, and at the budget, whatever the speed
    assert metric_steps(tmp_path / "idle") == metric_steps(tmp_path / "busy") == [2048, 3072, 4096]
    last = json.loads((tmp_path / "busy" / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["reward_int_mean"] != 0.0  # RND's reward over the last stretch, which was never written before


def test_ctrl_c_leaves_a_last_row_at_the_checkpoint_it_saves(tmp_path):
    out = tmp_path / "stopped"
    command = [sys.executable, "-m", "llmexplore", *COMMAND, "--steps", "1000000", "--out", str(out)]
    process = subprocess.Popen(command, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_rows(out)) < 2:  # rows at 1500-step cadence: training is under way
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1, stderr[-3000:]  # interrupted, not complete
    checkpoints = list_checkpoints(out)
    assert checkpoints, "Ctrl-C saved no checkpoint"
    assert metric_steps(out)[-1] == checkpoint_env_steps(checkpoints[-1])


def _rows(out: Path) -> list[str]:
    path = out / "metrics.jsonl"
    return path.read_text().splitlines() if path.exists() else []
