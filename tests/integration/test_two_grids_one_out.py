"""Two grids on one output folder (issue 49): the cell is trained once, and the grid that found it held by the
other says so and counts it done elsewhere: both exit 0, and no grid.json calls a complete cell failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

GRID = """
    name: twice
    defaults: {train: {envs_per_worker: 8, batch_size: 512, torch_threads: 1}}
    set: {method: none, task: crafter:reward-free, steps: 2048, seed: 0}
"""


def test_two_grids_on_one_out_train_the_cell_once_and_both_exit_0(tmp_path: Path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(textwrap.dedent(GRID).lstrip())
    outs = [tmp_path / "out", tmp_path / "out"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-m", "llmexplore", "grid", str(grid), "--out", str(out),
                               "--retries", "0", "--no-leaderboard"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for out in outs]
    results = [(p.wait(600), *p.communicate()) for p in procs]
    for code, _, stderr in results:
        assert code == 0, stderr[-3000:]  # the old code: the grid refused by the lock exited 1
        assert "Traceback" not in stderr and "FAILED" not in stderr, stderr[-3000:]
    (cell,) = json.loads((tmp_path / "out" / "grid.json").read_text())["cells"]
    assert cell["status"] in ("complete", "elsewhere") and cell["error"] is None
    record = read_record(Path(cell["run_dir"]))
    assert record.status == "complete" and len(record.sessions) == 1  # trained once
    said = "".join(stderr for _, _, stderr in results)
    assert "its folder is in use by process" in said and "completed it" in said  # the waiting grid said so
