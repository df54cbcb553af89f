"""sample-factory still trains on the installed stack, in one process and with rollout workers.

sample-factory 2.1.1 is installed without its pins (docs/INSTALL.md), so a new numpy, gymnasium or
huggingface-hub can break it where its pins would have refused them: numpy 2.4 made serial runs raise
and killed a parallel run's rollout workers before the first batch. Two short NetHack runs through
the CLI, as a user starts them, catch such a break in about a minute, with the failing process named.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
STEPS = 2048
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("mode,options", [("serial", ()), ("parallel", ("-t", "num_workers=2"))])
def test_a_short_nethack_run_trains_to_its_budget(mode, options, tmp_path):
    out = tmp_path / mode
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "llmexplore", "run", "--method", "none", "--task", "nethack:score",
         "--seed", "0", "--steps", str(STEPS), "-t", "batch_size=512", "-t", "envs_per_worker=4", *options,
         "--out", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= STEPS, (record.status, record.env_steps)
    assert (out / "metrics.jsonl").read_text().strip(), "no metrics row: the learner trained no batch"
    print(f"{mode}: {record.env_steps} steps in {seconds:.0f} s, nle {record.environment.get('nle')}")
