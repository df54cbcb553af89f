"""The SLURM backend against a real cluster: slurmctld and slurmd, no accounting (slow).

Runs where a SLURM controller answers and a node is up, e.g. after ``scripts/slurm_local.sh
start`` (what CI does when the machine allows); skipped elsewhere. The cells are tiny Crafter
runs, so that the whole module takes a few minutes on a 2-CPU node.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import checkpoint_env_steps, latest_checkpoint
from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_distributed import start_grid
from tests.integration.test_grid_runner import grid_file, run_grid

CELL = "none/crafter:reward-free/seed0"
SMALL = "train: {envs_per_worker: 8, batch_size: 512, save_every_sec: 1}"


def cluster_problem() -> str | None:
    """Why no test can run here, or None when a controller answers and a node takes jobs."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no SLURM client here (scripts/slurm_local.sh start sets up a cluster)"
    try:
        result = subprocess.run(["sinfo", "--Node", "--noheader", "--format=%T"], capture_output=True, text=True,
                                timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"sinfo failed: {exc}"
    if result.returncode != 0:
        return f"no SLURM controller answers: {result.stderr.strip()[:200]}"
    if not any(s.startswith(("idle", "mixed", "allocated")) for s in result.stdout.split()):
        return f"no SLURM node takes jobs (states: {result.stdout.split()})"
    return None


@pytest.fixture(scope="module")
def partition() -> str:
    problem = cluster_problem()
    if problem:
        pytest.skip(problem)
    found = subprocess.run(["sinfo", "--noheader", "--format=%P"], capture_output=True, text=True).stdout.split()
    return next((p.rstrip("*") for p in found if p.endswith("*")), found[0].rstrip("*"))


def slurm_args(partition: str, *extra: str) -> list[str]:
    return ["--backend", "slurm", "-b", f"partition={partition}", "-b", "time_minutes=20", *extra]


def ledger(out: Path) -> dict:
    try:
        return json.loads((out / "slurm" / "jobs.json").read_text())
    except (OSError, ValueError):
        return {}


def job_state(job_id: str) -> str:
    result = subprocess.run(["squeue", "--noheader", "--states=all", "--jobs", job_id, "--format=%T"],
                            capture_output=True, text=True)
    return result.stdout.strip() or "GONE"


def wait_until(condition, timeout: float, what: str, proc: subprocess.Popen | None = None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the grid ended while waiting for {what}: {proc.stderr.read()[-3000:]}")
        found = condition()
        if found:
            return found
        time.sleep(0.5)
    if proc is not None:
        proc.kill()
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def checkpointed(run_dir: Path) -> bool:
    """The cell has saved a checkpoint after some training (sample-factory also saves one at step 0)."""
    try:
        latest = latest_checkpoint(run_dir)
        return latest is not None and checkpoint_env_steps(latest) > 0 and read_record(run_dir).status == "running"
    except Exception:  # noqa: BLE001 - nothing written yet
        return False


def run_dir(out: Path, seed: int = 0) -> Path:
    return out / "runs" / "none" / "crafter-reward-free" / f"seed{seed}"


def no_duplicated_rows(path: Path) -> None:
    """A resumed cell continues its logs from the checkpoint: no row of the interrupted session twice."""
    metrics = [json.loads(line)["env_steps"] for line in (path / "metrics.jsonl").read_text().splitlines()]
    assert metrics == sorted(set(metrics)), f"metrics rows repeated: {metrics}"
    episodes = [json.loads(line)["env_steps"] for line in (path / "episodes.jsonl").read_text().splitlines()]
    assert episodes == sorted(episodes), "episodes rows go back in env steps (logged twice)"


def resumed_from_checkpoint(path: Path) -> None:
    record = read_record(path)
    assert record.status == "complete" and record.env_steps >= record.budget
    statuses = [s.status for s in record.sessions]
    assert statuses[-1] == "complete" and len(statuses) == 2, statuses
    first, last = record.sessions
    assert 0 < last.env_steps_start <= first.env_steps_end, "the rerun resumes from the cell's checkpoint"


@pytest.mark.slow
def test_a_two_cell_grid_runs_as_two_jobs_with_the_dry_run_scripts(tmp_path, partition):
    path = grid_file(tmp_path, f"""
        name: pair
        suite: {{resources: {{cpus: 1, memory_gb: 1, time_minutes: 20}}}}
        defaults: {{steps: 2048, task: crafter:reward-free, {SMALL}}}
        vary: {{seed: [0, 1]}}
        set: {{method: none}}
    """)
    out = tmp_path / "out"
    dry = run_grid(path, out, "--dry-run", *slurm_args(partition))
    assert dry.returncode == 0, dry.stderr
    printed = dry.stdout[dry.stdout.index("#!/bin/bash"):]
    assert printed.count("#!/bin/bash") == 1 and "2 job(s)" in dry.stdout  # equal resources: one script

    result = run_grid(path, out, *slurm_args(partition))
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = sorted(p for p in (out / "slurm").iterdir() if p.name.isdigit())
    assert len(jobs) == 2
    for job in jobs:
        assert (job / f"{job.name}_submission.sh").read_text() == printed
    assert (out / "leaderboard" / "leaderboard.csv").exists()
    assert "Bypassing sacct" not in result.stderr
    for job in jobs:  # each state once, not once per poll
        assert len(re.findall(rf"SLURM job {job.name} RUNNING\n", result.stderr)) == 1, result.stderr
    assert {c["status"] for c in json.loads((out / "grid.json").read_text())["cells"]} == {"complete"}


@pytest.mark.slow
def test_a_cancelled_job_is_reported_and_a_rerun_finishes_it_from_its_checkpoint(tmp_path, partition):
    path = grid_file(tmp_path, f"""
        name: cancel
        suite: {{resources: {{cpus: 1, memory_gb: 1, time_minutes: 20}}}}
        defaults: {{steps: 4096, task: crafter:reward-free, {SMALL}}}
        set: {{method: none}}
    """)
    out = tmp_path / "out"
    proc = start_grid(path, out, "--retries", "0", "--no-leaderboard", *slurm_args(partition))
    wait_until(lambda: checkpointed(run_dir(out)), 300, "a checkpoint", proc)
    job_id = ledger(out)[CELL]["job_id"]
    subprocess.run(["scancel", job_id], check=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stderr[-3000:]
    assert f"SLURM job {job_id} CANCELLED" in stderr
    cell = json.loads((out / "grid.json").read_text())["cells"][0]
    assert cell["status"] == "failed"
    assert f"SLURM job {job_id} ended (CANCELLED) before the cell did" in cell["error"]
    assert f"FAILED {CELL}: SLURM job {job_id} ended (CANCELLED)" in stderr
    assert read_record(run_dir(out)).sessions[0].status in ("interrupted", "killed")

    result = run_grid(path, out, *slurm_args(partition))
    assert result.returncode == 0, result.stderr[-3000:]
    resumed_from_checkpoint(run_dir(out))
    no_duplicated_rows(run_dir(out))


@pytest.mark.slow
def test_a_requeued_job_resumes_its_cell_without_duplicated_rows(tmp_path, partition):
    path = grid_file(tmp_path, f"""
        name: requeue
        suite: {{resources: {{cpus: 1, memory_gb: 1, time_minutes: 20}}}}
        defaults: {{steps: 4096, task: crafter:reward-free, {SMALL}}}
        set: {{method: none}}
    """)
    out = tmp_path / "out"
    proc = start_grid(path, out, "--no-leaderboard", *slurm_args(partition))
    wait_until(lambda: checkpointed(run_dir(out)), 300, "a checkpoint", proc)
    job_id = ledger(out)[CELL]["job_id"]
    subprocess.run(["scontrol", "requeue", job_id], check=True)  # what a preemption with requeue does
    # SLURM holds a requeued job back for about two minutes (BeginTime); let it start now
    wait_until(lambda: job_state(job_id) == "PENDING", 120, "the requeued job to be pending", proc)
    subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], check=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    cell = json.loads((out / "grid.json").read_text())["cells"][0]
    assert cell["status"] == "complete" and cell["attempts"] == 1, "a requeue is not a failed attempt"
    assert f"SLURM job {job_id} PENDING" in stderr
    assert len(list((out / "slurm").glob("[0-9]*"))) == 1, "the same job ran again, nothing new was submitted"
    resumed_from_checkpoint(run_dir(out))
    no_duplicated_rows(run_dir(out))


@pytest.mark.slow
def test_a_rerun_after_the_driver_was_killed_follows_its_jobs(tmp_path, partition):
    """Two cells that each take the whole 2-CPU node: one runs, one waits in the queue."""
    cpus = max(int(c) for c in subprocess.run(["sinfo", "--noheader", "--format=%c"], capture_output=True,
                                              text=True).stdout.split())
    path = grid_file(tmp_path, f"""
        name: orphans
        suite: {{resources: {{cpus: {cpus}, memory_gb: 1, time_minutes: 20}}}}
        defaults: {{steps: 2048, task: crafter:reward-free, {SMALL}}}
        vary: {{seed: [0, 1]}}
        set: {{method: none}}
    """)
    out = tmp_path / "out"
    proc = start_grid(path, out, "--no-leaderboard", *slurm_args(partition))
    jobs = wait_until(lambda: len(ledger(out)) == 2 and ledger(out), 120, "two submitted jobs", proc)
    first, second = (jobs[f"none/crafter:reward-free/seed{s}"]["job_id"] for s in (0, 1))
    wait_until(lambda: {job_state(first), job_state(second)} == {"RUNNING", "PENDING"}, 120, "one job queued", proc)
    proc.send_signal(signal.SIGKILL)  # the driver dies without cancelling anything
    proc.wait()
    running = first if job_state(first) == "RUNNING" else second
    done_seed = 0 if running == first else 1
    wait_until(lambda: read_record(run_dir(out, done_seed)).status == "complete" if (run_dir(out, done_seed) /
               "run.json").exists() else False, 300, "the running cell to finish without its driver")
    kept = (run_dir(out, done_seed) / "run.json").read_text()

    result = run_grid(path, out, *slurm_args(partition, "--no-leaderboard"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir(out, done_seed) / "run.json").read_text() == kept, "a finished cell was run again"
    other = second if running == first else first
    assert f"SLURM job {other} of an earlier run is" in result.stderr, result.stderr[-3000:]
    assert sorted(p.name for p in (out / "slurm").glob("[0-9]*")) == sorted([first, second]), "a cell was resubmitted"
    for seed in (0, 1):
        record = read_record(run_dir(out, seed))
        assert record.status == "complete" and [s.status for s in record.sessions] == ["complete"]
    cells = {c["id"]: c["status"] for c in json.loads((out / "grid.json").read_text())["cells"]}
    assert cells[f"none/crafter:reward-free/seed{done_seed}"] == "skipped"


@pytest.mark.slow
def test_a_cell_larger_than_every_node_is_refused_before_submission(tmp_path, partition):
    nodes = subprocess.run(["sinfo", "--Node", "--noheader", "--format=%N|%c|%m"], capture_output=True,
                           text=True).stdout.split()
    name, cpus, _ = nodes[0].split("|")
    for resources, named in ((f"cpus: {int(cpus) + 1}, memory_gb: 1", f"{int(cpus)} CPUs"),
                             ("cpus: 1, memory_gb: 100000", "GB")):
        path = grid_file(tmp_path, f"""
            name: huge
            suite: {{resources: {{{resources}, time_minutes: 20}}}}
            defaults: {{steps: 2048, task: crafter:reward-free}}
            set: {{method: none}}
        """)
        out = tmp_path / "out"
        result = run_grid(path, out, *slurm_args(partition), timeout=120)
        assert result.returncode == 2, result.stderr[-2000:]
        assert "more than any node of partition" in result.stderr and f"{name} (" in result.stderr
        assert named in result.stderr and "Traceback" not in result.stderr
        assert not list((out / "slurm").glob("[0-9]*")) if (out / "slurm").exists() else True
