"""The Ray and SLURM backends as a user runs them (slow: trains small agents).

Ray runs on a real local cluster this module starts; SLURM runs through submitit's local
executor, which submits, signals, requeues and cancels jobs as it does on a cluster. One
small grid runs on every backend; the Ray run loses a worker mid-cell and the SLURM run is
preempted mid-cell, and all three must end with the same records and tables.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from llmexplore.agents.checkpoints import checkpoint_env_steps, latest_checkpoint
from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_grid_runner import cli_env, grid_file, records, run_grid

pytestmark = pytest.mark.slow

# sample-factory's serial mode keeps only its periodic checkpoints when interrupted, so they are
# frequent here; the target cell is longer, so that it is still running after its first one
GRID = """
    name: compare
    suite: {resources: {cpus: 1, memory_gb: 1, time_minutes: 30}}
    defaults: {steps: 4096, task: nethack:score, train: {envs_per_worker: 8, batch_size: 512, save_every_sec: 1}}
    blocks:
      - set: {method: none}
      - set: {method: rnd, steps: 8192}
"""
TARGET = "rnd/nethack:score/seed0"  # the cell whose worker is killed / whose job is preempted


@pytest.fixture(scope="module")
def ray_address():
    ray_cluster_utils = pytest.importorskip("ray.cluster_utils")
    cluster = ray_cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "include_dashboard": False, "object_store_memory": 100 * 2**20})
    try:
        yield cluster.address
    finally:
        cluster.shutdown()


def start_grid(path: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "llmexplore", "grid", str(path), "--out", str(out), "--quiet",
                             *extra], env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stepping_cell_process(out: Path, cell: str, proc: subprocess.Popen, timeout: float = 400,
                          checkpointed: bool = False) -> psutil.Process:
    """The `llmexplore run` process of a cell, once its record shows it has taken env steps (and,
    if asked, once it has written a checkpoint after some training: sample-factory also saves
    one at step 0, and resuming from that one would be starting over)."""
    run_dir = out / "runs" / cell.split("/")[0] / "nethack-score" / "seed0"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the grid ended early: {proc.stderr.read()[-3000:]}")
        try:
            latest = latest_checkpoint(run_dir) if checkpointed else None
            saved = not checkpointed or (latest is not None and checkpoint_env_steps(latest) > 0)
            if saved and read_record(run_dir).env_steps > 0:
                found = cell_processes(f"--out {run_dir}")
                if found:
                    return found[0]
        except Exception:  # noqa: BLE001 - no record yet
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"{cell} never started stepping")


def cell_processes(text: str) -> list[psutil.Process]:
    """Live `llmexplore run` processes whose command line mentions text."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "llmexplore" in cmd and " run " in cmd and text in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


def gone(pid: int, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, ray_address):
    """The same grid on each backend: cell id -> record, grid.json and leaderboard.csv per backend."""
    base = tmp_path_factory.mktemp("backends")
    path = grid_file(base, GRID)
    found: dict[str, dict] = {}

    out = base / "local"
    result = run_grid(path, out, "--jobs", "2")
    found["local"] = {"out": out, "returncode": result.returncode, "stderr": result.stderr}

    out = base / "ray"
    proc = start_grid(path, out, "--backend", "ray", "-b", f"address={ray_address}", "--jobs", "2")
    cell = stepping_cell_process(out, TARGET, proc, checkpointed=True)
    worker = cell.parent()
    worker_cmd = " ".join(worker.cmdline())
    worker.send_signal(signal.SIGKILL)  # the Ray worker running the cell dies (OOM killer, node trouble)
    cell_gone = gone(cell.pid, 120)
    _, stderr = proc.communicate(timeout=900)
    found["ray"] = {"out": out, "returncode": proc.returncode, "stderr": stderr, "worker_cmd": worker_cmd,
                    "cell_gone": cell_gone}

    out = base / "slurm"
    proc = start_grid(path, out, "--backend", "slurm", "-b", "executor=local", "--jobs", "2")
    cell = stepping_cell_process(out, TARGET, proc, checkpointed=True)
    job_process = cell.parent()
    job_cmd = " ".join(job_process.cmdline())
    job_process.send_signal(signal.SIGUSR2)  # SLURM's warning: time limit near, or preemption
    _, stderr = proc.communicate(timeout=900)
    found["slurm"] = {"out": out, "returncode": proc.returncode, "stderr": stderr, "job_cmd": job_cmd}
    return found


def summary(out: Path) -> dict:
    return {c["id"]: c for c in json.loads((out / "grid.json").read_text())["cells"]}


def test_a_killed_ray_worker_makes_its_cell_retry_and_complete(outputs):
    ray = outputs["ray"]
    assert ray["returncode"] == 0, ray["stderr"][-3000:]
    assert "ray::" in ray["worker_cmd"] or "default_worker" in ray["worker_cmd"], ray["worker_cmd"]
    assert ray["cell_gone"], "the cell outlived its Ray worker"
    cells = summary(ray["out"])
    target = cells[TARGET]
    assert target["status"] == "complete" and target["attempts"] == 2
    assert "Ray worker running the cell died" in target["history"][0]["error"]
    assert cells["none/nethack:score/seed0"]["attempts"] == 1
    record = records(ray["out"])[TARGET]
    assert record.status == "complete" and record.env_steps >= record.budget
    first, last = record.sessions[0], record.sessions[-1]
    assert first.status in ("interrupted", "killed") and last.status == "complete"
    assert 0 < last.env_steps_start <= first.env_steps_end, "the retry resumes from the cell's checkpoint"


def test_a_preempted_slurm_job_checkpoints_requeues_and_completes(outputs):
    slurm = outputs["slurm"]
    assert slurm["returncode"] == 0, slurm["stderr"][-3000:]
    assert "submitit" in slurm["job_cmd"]
    cells = summary(slurm["out"])
    assert cells[TARGET]["status"] == "complete"
    assert cells[TARGET]["attempts"] == 1, "a requeue is not a failed attempt"
    record = records(slurm["out"])[TARGET]
    assert [s.status for s in record.sessions] == ["interrupted", "complete"]
    assert 0 < record.sessions[1].env_steps_start <= record.sessions[0].env_steps_end
    logs = "".join(p.read_text() for p in (slurm["out"] / "slurm" / "jobs").glob("*_log.*"))
    assert "Requeued" in logs


def key_paths(value, prefix: str = "") -> set[str]:
    """Every key of a JSON document, as dotted paths (list items share one path)."""
    if isinstance(value, dict):
        out = set()
        for key, item in value.items():
            out |= {f"{prefix}{key}"} | key_paths(item, f"{prefix}{key}.")
        return out
    if isinstance(value, list):
        return set().union(*(key_paths(item, f"{prefix}[].") for item in value)) if value else set()
    return set()


def test_every_backend_writes_the_same_records_and_tables(outputs):
    keys, columns, cell_ids = {}, {}, {}
    for backend, found in outputs.items():
        assert found["returncode"] == 0, (backend, found["stderr"][-3000:])
        runs = sorted((found["out"] / "runs").rglob("run.json"))
        assert len(runs) == 2
        docs = [json.loads(p.read_text()) for p in runs]
        keys[backend] = [key_paths(d) - {k for k in key_paths(d) if k.startswith("environment.")} for d in docs]
        cell_ids[backend] = sorted(d["cell"] for d in docs)
        with open(found["out"] / "leaderboard" / "leaderboard.csv") as fh:
            columns[backend] = next(csv.reader(fh))
        assert json.loads((found["out"] / "grid.json").read_text())["backend"] == backend
    assert keys["ray"] == keys["local"] and keys["slurm"] == keys["local"]
    assert columns["ray"] == columns["local"] and columns["slurm"] == columns["local"]
    assert cell_ids["ray"] == cell_ids["local"] == cell_ids["slurm"]
    assert "progression" in ",".join(columns["local"]) or "metric" in columns["local"]


@pytest.mark.parametrize("backend", ["ray", "slurm"])
def test_ctrl_c_stops_every_cell_and_job(tmp_path, backend, request):
    extra = ["--backend", backend]
    if backend == "ray":
        extra += ["-b", f"address={request.getfixturevalue('ray_address')}"]
    else:
        extra += ["-b", "executor=local"]
    path = grid_file(tmp_path, GRID)
    out = tmp_path / "out"
    proc = start_grid(path, out, "--jobs", "2", "--no-leaderboard", *extra)
    stepping_cell_process(out, TARGET, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr[-3000:]
    assert json.loads((out / "grid.json").read_text())["interrupted"] is True
    assert not cell_processes(str(out)), "a cell outlived the interrupted grid"
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, f"processes left behind: {[p.info['cmdline'] for p in leftovers]}"
    assert all(r.status != "running" for r in records(out).values())
