"""``grid --dry-run`` with the SLURM and Ray backends prints exactly what the backend would submit."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners.dry_run import ray_plan, slurm_plan
from llmexplore.cli import main

pytest.importorskip("submitit")
REPO = Path(__file__).resolve().parents[2]
GRID = REPO / "configs" / "quickstart.yaml"
OPTIONS = {"pack": 3, "partition": "gpu", "account": "lab", "time_minutes": 90, "setup": ["module load cuda"],
           "sbatch": {"mail-type": "END"}}


def _fake_slurm_commands(tmp_path, monkeypatch):
    """sbatch and srun on PATH, so the real backend's check() passes; neither is ever called here."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sbatch", "srun"):
        path = bin_dir / name
        path.write_text("#!/bin/sh\necho 'not on a cluster' >&2\nexit 1\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_slurm_dry_run_shows_the_scripts_the_backend_submits(tmp_path, monkeypatch):
    from llmexplore.benchmarks.grids.runners import slurm

    grid = load_grid(GRID, tmp_path / "out")
    plan = slurm_plan(grid, dict(OPTIONS))
    # the real backend, its executor replaced at submitit's level: what it would hand to sbatch
    _fake_slurm_commands(tmp_path, monkeypatch)
    submitted: list[tuple[dict, int, str]] = []

    class FakeExecutor:
        def __init__(self, folder, max_num_timeout=3, python=None):
            self.folder, self.python, self.parameters = Path(folder), python, {}

        def update_parameters(self, **params):
            self.parameters.update(params)

        def submit(self, batch):
            return self.submit_array([batch])[0]

        def submit_array(self, batches):
            params = dict(self.parameters, **({"map_count": len(batches)} if len(batches) > 1 else {}))
            submitted.append((params, len(batches), str(self.folder)))
            return [object() for _ in batches]

    monkeypatch.setattr(slurm.submitit, "SlurmExecutor", FakeExecutor)
    backend = slurm.SlurmBackend(jobs=None, **OPTIONS)
    backend.check(grid)
    for cell in grid.cells:
        backend.start(cell, attempt=1)
    backend.flush()
    assert len(submitted) == 3  # 8 cells of equal resources, packs of 3: 3 + 3 + 2
    for params, _, folder in submitted:
        script = slurm.sbatch_script(params, folder, python=shlex.quote(sys.executable))
        assert script.rstrip() in plan
    for line in ("#SBATCH --partition=gpu", "#SBATCH --account=lab", "#SBATCH --time=90", "#SBATCH --cpus-per-task=3",
                 "#SBATCH --mem=12G", "#SBATCH --cpus-per-task=2", "#SBATCH --mail-type=END", "module load cuda",
                 "#SBATCH --signal=USR2@120"):
        assert line in plan, line
    for cell in grid.cells:
        assert f"--out {cell.run_dir} --quiet" in plan


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
