"""``grid --dry-run`` with the SLURM and Ray backends prints exactly what the backend would submit."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners.dry_run import ray_plan
from llmexplore.cli import main

pytest.importorskip("submitit")
REPO = Path(__file__).resolve().parents[2]
GRID = REPO / "configs" / "quickstart.yaml"


def test_ray_dry_run_shows_the_task_options_and_hides_secret_values(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print")
    grid = load_grid(GRID, tmp_path / "out")
    plan = ray_plan(grid, {"address": "ray://head:10001", "forward_env": ["OPENAI_API_KEY"]})
    assert "ray.init(address='ray://head:10001', namespace='llmexplore'" in plan
    assert "sk-do-not-print" not in plan and "OPENAI_API_KEY" in plan
    for cell in grid.cells:
        assert f"name='llmexplore {cell.id}'" in plan
    assert plan.count("num_cpus=1, num_gpus=0, memory=4294967296, max_retries=0, retry_exceptions=False") == 8
    local = ray_plan(grid, {"num_cpus": 4})
    assert "start a local Ray instance" in local and "num_cpus=4" in local


def test_the_grid_command_prints_the_plan_and_submits_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grid", str(GRID), "--dry-run", "--backend", "slurm", "-b", "partition=debug", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "what --backend slurm would submit (nothing is submitted)" in text and "#SBATCH --partition=debug" in text
    assert not out.exists()
    assert main(["grid", str(GRID), "--dry-run", "--out", str(out)]) == 0
    assert "would submit" not in capsys.readouterr().out
