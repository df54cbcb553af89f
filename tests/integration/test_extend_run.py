"""A finished run continues to a larger budget (issue 52), and a resume never trains past its budget
(issue 49, class 2).

`llmexplore run --out DIR --steps N`, or a grid whose cell budget grew, continues the folder's run from
its last checkpoint; the record keeps every session; the episodes up to the old budget are the ones the
first session wrote, row for row, and those an uninterrupted run of the larger budget writes up to there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import RECORD_FILE, read_record
from tests.helpers.run_logs import check_run_folder, rows_through

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BATCH = 2048  # NetHack's default: 32 envs x 32-step rollouts
RUN = ["run", "--method", "rnd", "--task", "nethack:score", "--seed", "4", "--quiet"]


def llmexplore(*args: str, code: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=600)
    assert result.returncode == code, result.stderr[-3000:]
    return result


def test_a_4096_step_run_extended_to_8192_is_one_record_with_two_sessions(tmp_path: Path):
    run_dir, reference_dir = tmp_path / "extended", tmp_path / "reference"
    llmexplore(*RUN, "--steps", "4096", "--out", str(run_dir))
    first = check_run_folder(run_dir, 4096, BATCH)
    llmexplore(*RUN, "--steps", "8192", "--out", str(reference_dir))
    reference = check_run_folder(reference_dir, 8192, BATCH)

    result = llmexplore("run", "--out", str(run_dir), "--steps", "8192", "--quiet")
    assert "extending" in result.stderr and "resuming from checkpoint_" in result.stderr
    rows = check_run_folder(run_dir, 8192, BATCH)
    record = read_record(run_dir)
    assert [(s.env_steps_start, s.env_steps_end, s.status) for s in record.sessions] == \
        [(0, 4096, "complete"), (4096, 8192, "complete")]
    assert record.budget == record.spec.steps == 8192 and record.finished_at is not None
    for session in record.sessions:  # each session proves what it ran with (issue 53)
        assert session.environment["git_commit"] and session.environment["nle"]
        assert len(session.environment["load_average_start"]) == 3
    for name in ("episodes.jsonl", "intrinsic.jsonl"):
        assert rows_through(rows[name], 4096) == first[name], f"{name}: the first session's rows changed"
        assert rows_through(rows[name], 4096) == rows_through(reference[name], 4096), name
        assert any(r["env_steps"] > 4096 for r in rows[name]), f"{name}: nothing from the extension"

    refused = llmexplore("run", "--out", str(run_dir), "--steps", "6000", code=2)
    assert "is smaller" in refused.stderr
    assert read_record(run_dir).sessions == record.sessions  # the refusal wrote nothing


def test_a_run_killed_after_its_last_checkpoint_resumes_to_complete_without_another_batch(tmp_path: Path):
    """The kill came between the checkpoint at the budget and the final record: the record still says
    running. Before, the resume trained one more batch (4,096 became 6,144)."""
    run_dir = tmp_path / "run"
    llmexplore(*RUN, "--steps", "4096", "--out", str(run_dir))
    episodes = (run_dir / "episodes.jsonl").read_text()
    record = json.loads((run_dir / RECORD_FILE).read_text())
    record["status"], record["finished_at"] = "running", None
    record["sessions"][-1]["status"] = "running"
    (run_dir / RECORD_FILE).write_text(json.dumps(record))

    llmexplore("run", "--out", str(run_dir), "--quiet")
    check_run_folder(run_dir, 4096, BATCH)
    sessions = read_record(run_dir).sessions
    assert [(s.env_steps_start, s.env_steps_end, s.status) for s in sessions] == \
        [(0, 4096, "killed"), (4096, 4096, "complete")]
    assert (run_dir / "episodes.jsonl").read_text() == episodes


def test_a_grid_whose_budget_grew_extends_its_cell(tmp_path: Path):
    grid_file, out = tmp_path / "grid.yaml", tmp_path / "out"
    text = "name: grow\ndefaults:\n  steps: {steps}\nblocks:\n  - tied:\n      - {{method: rnd, task: nethack:score}}\n"
    grid_file.write_text(text.format(steps=4096))
    llmexplore("grid", str(grid_file), "--out", str(out), "--quiet", "--no-leaderboard")
    cell = out / "runs" / "rnd" / "nethack-score" / "seed0"
    assert read_record(cell).env_steps == 4096
    grid_file.write_text(text.format(steps=8192))
    llmexplore("grid", str(grid_file), "--out", str(out), "--quiet", "--no-leaderboard")
    check_run_folder(cell, 8192, BATCH)
    assert [s.status for s in read_record(cell).sessions] == ["complete", "complete"]
    assert {c["status"] for c in json.loads((out / "grid.json").read_text())["cells"]} == {"complete"}
