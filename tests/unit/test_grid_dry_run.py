"""``grid --dry-run`` with the SLURM and Ray backends prints exactly what the backend would submit."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners.dry_run import ray_plan, slurm_plan
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
    assert text.count(" -m llmexplore run --out ") == 8  # each cell's command, not only submitit's srun line
    assert not out.exists()
    from llmexplore.benchmarks.grids.backend_options import parse_options
    from llmexplore.benchmarks.grids.runners.slurm import planned_jobs
    jobs = planned_jobs(load_grid(GRID, out), parse_options("slurm", {"partition": "debug"}))
    [script] = {script for _, script in jobs}  # equal resources: one script for every job
    assert text[text.index("#!/bin/bash"):] == script  # byte for byte what submitit writes, no newline added
    assert main(["grid", str(GRID), "--dry-run", "--out", str(out)]) == 0
    assert "would submit" not in capsys.readouterr().out


def test_the_slurm_plan_shows_each_cells_llmexplore_run_command_before_its_script(tmp_path):
    """docs/distributed.md: each job's script, which cells it runs side by side, and each cell's command
    (the script's srun line only starts submitit's loader, so the command is not in it)."""
    grid = load_grid(GRID, tmp_path / "out")
    plan = slurm_plan(grid, {"pack": 2, "python": "/opt/venv/bin/python"})
    for cell in grid.cells:
        command = f"#   {cell.id}: /opt/venv/bin/python -m llmexplore run --out {cell.run_dir} --quiet"
        assert plan.count(command) == 1
        assert plan.index(command) < plan.index("#!/bin/bash")  # the script itself comes last, as written
    assert "4 job(s), one per pack of cells" in plan and plan.count("#!/bin/bash") == 1
    local = slurm_plan(grid, {"executor": "local"})
    assert "#!/bin/bash" not in local and all(f"--out {cell.run_dir} --quiet" in local for cell in grid.cells)


def _minihack_grid(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "minihack.yaml"
    path.write_text("name: mh\nsuite: {resources: {time_minutes: 60}}\n"
                    f"set: {{method: none, task: 'minihack:keyroom-s5'{extra}}}\nvary: {{seed: [0, 1]}}\n")
    return path


def test_a_minihack_cell_without_steps_warns_of_the_slurm_time_limit_before_submission(tmp_path, capsys):
    """Without `steps` MiniHack's published 50M steps pass the budget rule (under a day on 2 cores: ~16 h),
    far past a 60-minute job even with its requeues: the dry run says so, with the fix."""
    path = _minihack_grid(tmp_path)
    assert main(["grid", str(path), "--dry-run", "--backend", "slurm", "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 cells none/minihack:keyroom-s5/seed0, none/minihack:keyroom-s5/seed1: 50,000,000 env " \
           "steps take about 16.3 hours (~850 env steps/s, minihack's 2-core figure)" in err
    assert "time limit of 60 minutes; with max_requeues=3 a job stops unfinished after about 4.0 hours" in err
    assert main(["grid", str(path), "--dry-run", "--backend", "slurm", "-b", "max_requeues=20",
                 "--out", str(tmp_path / "out")]) == 0
    assert "note: 2 cells" in capsys.readouterr().err  # the requeues reach the budget: a note, not a warning
    for backend in ("local", "ray"):  # no time limit there
        assert main(["grid", str(path), "--dry-run", "--backend", backend, "--out", str(tmp_path / "out")]) == 0
        assert "time limit" not in capsys.readouterr().err
    within = _minihack_grid(tmp_path, ", steps: 1000000")  # ~20 minutes at the same speed
    assert main(["grid", str(within), "--dry-run", "--backend", "slurm", "--out", str(tmp_path / "out")]) == 0
    assert "time limit" not in capsys.readouterr().err


def test_a_gpu_cell_with_sixteen_workers_is_estimated_at_the_gpu_machines_speed(tmp_path):
    from llmexplore.benchmarks.grids.time_limits import estimated_seconds

    path = tmp_path / "gpu.yaml"
    path.write_text("name: gpu\nsuite: {resources: {gpus: 1, cpus: 16}}\nset: {method: none, task: nethack:score, "
                    "steps: 100000000, train: {preset: published, num_workers: 16}}\n")
    seconds, source = estimated_seconds(load_grid(path, tmp_path / "out").cells[0])
    assert round(seconds) == round(100_000_000 / 15_565) and "16-core GPU machine" in source


def test_a_real_slurm_run_warns_of_the_time_limit_before_the_backend_is_even_checked(tmp_path, capsys):
    """Not only the dry run: `grid --backend slurm` says it first too. The partition named here does not
    exist, so nothing is submitted where SLURM is installed (CI's local cluster), nor where it is not."""
    code = main(["grid", str(_minihack_grid(tmp_path)), "--backend", "slurm", "-b", "partition=no-such-partition",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.index("warning: 2 cells") < err.index("error")
    assert not (tmp_path / "out" / "runs").exists()
