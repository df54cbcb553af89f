"""Short Housekeep training runs through the CLI, as a user runs them (slow: they train agents)."""

from __future__ import annotations

import json

import pytest

from llmexplore.benchmarks.run.record import read_record
from tests.conftest import SHARED_DATA
from tests.integration.test_one_cell import run_cli

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep"),
]
STEPS = 2048


@pytest.mark.parametrize("method, task", [("none", "housekeep:pomaria_2"), ("rnd", "housekeep:pomaria_2-reward-free")])
def test_a_short_run_writes_a_record_with_rearrangement_success(tmp_path, method, task):
    out = tmp_path / method
    result = run_cli("run", "--method", method, "--task", task, "--seed", "0", "--steps", str(STEPS),
                     "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= STEPS
    assert record.metric == "rearrange_success"
    success = record.final_metrics["rearrange_success"]
    assert 0.0 <= success <= 1.0 and summary["rearrange_success"] == success
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert 0 < record.final_metrics["episodes"] <= len(episodes)  # 100-step episodes: ~20 in the budget
    assert all({"rearrange_success", "objects_fixed", "objects_displaced", "env_steps"} <= set(e) for e in episodes)
    assert record.files.checkpoints
    if method == "rnd":
        assert record.final_metrics["intrinsic_return"] > 0
        assert record.spec.ext_coef == 0.0
        assert all(e["return"] == 0.0 for e in episodes)

    board = run_cli("leaderboard", str(tmp_path), "--bootstrap", "100")
    assert board.returncode == 0, board.stderr[-3000:]
    table = (tmp_path / "leaderboard" / "leaderboard.md").read_text()
    assert f"## {task}" in table and "rearrange_success (mean ± s.e.)" in table
    row = next(line for line in table.splitlines() if line.startswith(f"| {method} "))
    assert f"{success:.2f}" in row
