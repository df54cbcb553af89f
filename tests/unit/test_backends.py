"""Grid backends without training: grid-file sections, resources and devices, SLURM job
parameters, the LM-endpoint check, and the remote launcher's process handling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from llmexplore.benchmarks.grids.backend_options import SlurmOptions, parse_options
from llmexplore.benchmarks.cli import backend_options
from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners import lm_endpoint
from llmexplore.benchmarks.grids.runners.base import GridRunner
from llmexplore.benchmarks.grids.runners.launch import (
    PROCESS_FILE,
    CellLaunch,
    CellProcesses,
    _gpu_slices,
    cell_process,
    read_exit_file,
    wait_for_cell_process,
)
from llmexplore.benchmarks.grids.runners.local import LocalBackend
from llmexplore.errors import ConfigError, UserError
from llmexplore.lm.config import LMConfig

REPO = Path(__file__).resolve().parents[2]
CELL = "defaults: {steps: 4096, task: nethack:score, train: {envs_per_worker: 8, batch_size: 512}}\n"


def grid_file(tmp_path: Path, text: str) -> Path:
    """A grid file: the given lines, then one small NetHack cell setting."""
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent(text).lstrip() + CELL)
    return path


# -- grid files: backend sections, resources, devices --------------------------------------------
def test_backend_sections_are_validated_with_their_lines(tmp_path):
    grid = load_grid(grid_file(tmp_path, """
        name: g
        slurm: {partition: gpu, pack: 2, sbatch: {mail-type: END}}
        ray:
          address: auto
        set: {method: none}
    """))
    assert grid.backend_options == {"slurm": {"partition": "gpu", "pack": 2, "sbatch": {"mail-type": "END"}},
                                    "ray": {"address": "auto"}}
    path = grid_file(tmp_path, """
        name: g
        slurm:
          partiton: gpu
          pack: 0
        ray: [auto]
        set: {method: none}
    """)
    with pytest.raises(ConfigError) as err:
        load_grid(path)
    text = str(err.value)
    assert f"{path}:3: slurm.partiton: Extra inputs are not permitted" in text
    assert f"{path}:4: slurm.pack: Input should be greater than or equal to 1" in text
    assert f"{path}:5: 'ray' must be a mapping" in text


def test_command_line_options_override_the_grid_file_key_by_key(tmp_path):
    grid = load_grid(grid_file(tmp_path, """
        name: g
        slurm: {partition: cpu, time_minutes: 30}
        set: {method: none}
    """))
    assert backend_options("slurm", grid, {"partition": "gpu"}) == {"partition": "gpu", "time_minutes": 30}
    with pytest.raises(ConfigError, match="unknown slurm option 'partiton'"):
        backend_options("slurm", grid, {"partiton": "gpu"})
    with pytest.raises(ConfigError, match="the local backend takes no options"):
        backend_options("local", grid, {"address": "auto"})
    with pytest.raises(ConfigError, match="unknown backend 'kubernetes'"):
        backend_options("kubernetes", grid, {})
    with pytest.raises(ConfigError, match="stop_grace_s .* must be shorter than signal_delay_s"):
        parse_options("slurm", {"stop_grace_s": 200, "signal_delay_s": 120})


def test_cells_given_gpus_train_on_gpu_and_gpu_cells_ask_for_one(tmp_path):
    """Validated on this CPU-only machine: a login node without a GPU must be able to submit GPU cells."""
    grid = load_grid(grid_file(tmp_path, """
        name: g
        suite: {resources: {cpus: 4, gpus: 1, memory_gb: 16}}
        vary: {method: [none, rnd]}
    """))
    assert {c.spec.train.device for c in grid.cells} == {"gpu"}
    assert {c.resources.gpus for c in grid.cells} == {1}

    grid = load_grid(grid_file(tmp_path, """
        name: g
        blocks:
          - set: {method: none, train.device: gpu}
          - set: {method: rnd}
    """))
    assert grid.cell("none/nethack:score/seed0").resources.gpus == 1
    assert grid.cell("rnd/nethack:score/seed0").resources.gpus == 0
    assert grid.cell("rnd/nethack:score/seed0").spec.train.device == "cpu"

    path = grid_file(tmp_path, """
        name: g
        suite: {resources: {gpus: 1}}
        set:
          method: none
          train: {device: cpu}
    """)
    with pytest.raises(ConfigError, match=r"grid.yaml:5: suite.resources.gpus is 1 but train.device is 'cpu'"):
        load_grid(path)


def test_local_cells_get_the_threads_their_suite_declares(tmp_path, monkeypatch):
    """Declared suite.resources.cpus sizes a local cell's torch threads, as on Ray and SLURM; without
    a declaration the machine's cores are split between the parallel cells."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    from llmexplore.benchmarks.grids.runners import local

    monkeypatch.setattr(local, "runs_on_this_machine", lambda: 0)  # nothing else trains here
    cores = len(os.sched_getaffinity(0))
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    declared = load_grid(grid_file(tmp_path / "a", """
        name: g
        suite: {resources: {cpus: 3}}
        set: {method: none}
    """), tmp_path / "a" / "out").cells[0]
    undeclared = load_grid(grid_file(tmp_path / "b", """
        name: g
        set: {method: none}
    """), tmp_path / "b" / "out").cells[0]
    assert LocalBackend(jobs=1).cell_env(declared)["OMP_NUM_THREADS"] == "3"
    assert LocalBackend(jobs=1).cell_env(undeclared)["MKL_NUM_THREADS"] == str(cores)
    assert LocalBackend(jobs=2 * cores).cell_env(undeclared)["OMP_NUM_THREADS"] == "1"


def test_local_backend_refuses_a_cell_that_asks_for_more_gpus_than_exist(tmp_path):
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    path = grid_file(tmp_path, f"""
        name: g
        suite: {{resources: {{gpus: {have + 1}}}}}
        set: {{method: none}}
    """)
    grid = load_grid(path, tmp_path / "out")
    with pytest.raises(ConfigError, match=r"asks for \d+ GPU\(s\).*but this machine has"):
        GridRunner(grid, LocalBackend(jobs=2)).run()
    assert not (tmp_path / "out" / "runs").exists(), "nothing may start before the check"
    cli = subprocess.run([sys.executable, "-m", "llmexplore", "grid", str(path), "--out", str(tmp_path / "out"),
                          "--quiet"], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert cli.returncode == 2 and "llmexplore grid: error: cell none/nethack:score/seed0 asks for" in cli.stderr
    assert "Traceback" not in cli.stderr


# -- SLURM job parameters --------------------------------------------------------------------------
def test_sbatch_parameters_carry_partition_time_cpus_gpus_memory_and_requeue(tmp_path):
    pytest.importorskip("submitit")
    from llmexplore.benchmarks.grids.runners.slurm import job_parameters, sbatch_script

    grid = load_grid(grid_file(tmp_path, """
        name: g
        suite: {resources: {cpus: 8, gpus: 1, memory_gb: 32.5, time_minutes: 240}}
        set: {method: none}
    """))
    resources = grid.cells[0].resources
    options = SlurmOptions(partition="gpu", account="lab", gpu_type="a100", sbatch={"mail-type": "END"})
    params = job_parameters(resources, 1, options, "llmexplore-g")
    assert params["partition"] == "gpu" and params["account"] == "lab"
    assert params["time"] == 240 and params["cpus_per_task"] == 8 and params["mem"] == "33280M"
    assert params["gpus_per_node"] == "a100:1"
    script = sbatch_script(params, tmp_path / "slurm" / "%j")
    for line in ("#SBATCH --partition=gpu", "#SBATCH --account=lab", "#SBATCH --time=240",
                 "#SBATCH --cpus-per-task=8", "#SBATCH --gpus-per-node=a100:1", "#SBATCH --mem=33280M",
                 "#SBATCH --requeue", "#SBATCH --signal=USR2@120", "#SBATCH --mail-type=END",
                 "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1", "#SBATCH --job-name=llmexplore-g"):
        assert line in script.splitlines(), line

    packed = job_parameters(resources, 3, SlurmOptions(time_minutes=30, requeue=False), "x")
    assert packed["cpus_per_task"] == 24 and packed["gpus_per_node"] == 3 and packed["mem"] == "99840M"
    assert packed["time"] == 30 and "partition" not in packed
    script = sbatch_script(packed, tmp_path)
    assert "#SBATCH --no-requeue" in script and "#SBATCH --requeue" not in script
    assert "#SBATCH --gpus-per-node=3" in script and "#SBATCH --time=30" in script


def test_slurm_backend_without_sbatch_says_how_to_run_here(tmp_path):
    pytest.importorskip("submitit")
    from llmexplore.benchmarks.grids.runners.slurm import SlurmBackend

    if subprocess.run(["which", "sbatch"], capture_output=True).returncode == 0:
        pytest.skip("this machine has SLURM")
    grid = load_grid(grid_file(tmp_path, "name: g\nset: {method: none}\n"), tmp_path / "out")
    with pytest.raises(ConfigError, match="(?s)needs SLURM's sbatch.*executor=local"):
        GridRunner(grid, SlurmBackend(partition="gpu")).run()


# -- SLURM without accounting: squeue and sinfo ------------------------------------------------------
def fake_command(outputs: list[tuple[int, str]]):
    """A stand-in for subprocess.run of squeue/sinfo: answers in turn, records the commands."""
    calls: list[list[str]] = []

    def run(command: list[str]) -> subprocess.CompletedProcess:
        calls.append(command)
        code, out = outputs.pop(0) if len(outputs) > 1 else outputs[0]
        return subprocess.CompletedProcess(command, code, stdout=out if code == 0 else "",
                                           stderr=out if code else "")
    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_job_states_come_from_squeue_and_a_job_it_stops_listing_has_ended(monkeypatch):
    from llmexplore.benchmarks.grids.runners import slurm_queue
    from llmexplore.benchmarks.grids.runners.slurm_queue import GONE, SlurmQueue

    listed = "7|PENDING|Resources\n8_1|RUNNING|None\n"
    failed = (1, "slurm_load_jobs error: timeout")
    run = fake_command([(0, listed), (0, listed), failed, failed,
                        (0, "7|CANCELLED|None\n"), (0, "")])
    queue = SlurmQueue(min_interval_s=0, run=run)
    queue.watch("7")
    first = queue.state("7")
    assert (first.state, first.reason, str(first), first.ended) == ("PENDING", "Resources", "PENDING (Resources)", False)
    assert str(queue.state("8_1")) == "RUNNING"  # array tasks one per line (--array); "None" is no reason
    assert "--states=all" in run.calls[0] and "--me" in run.calls[0] and not any("sacct" in c for c in run.calls[0])
    assert queue.state("7").state == "PENDING" and queue.error  # squeue failed: nothing counts as ended
    assert str(queue.state("9")) == "UNKNOWN (squeue failed: slurm_load_jobs error: timeout)"
    assert queue.state("7").ended and str(queue.state("7")) == "CANCELLED"
    assert queue.state("7").state == "CANCELLED", "an ended job keeps its state once squeue drops it"
    assert queue.state("99").state == GONE  # never listed, not just submitted
    queue.watch("100")
    assert queue.state("100").state == "PENDING"  # just submitted: squeue may not list it yet
    monkeypatch.setattr(slurm_queue, "VISIBLE_WITHIN_S", 0.0)
    assert queue.state("100").state == GONE


def test_a_cell_larger_than_every_slurm_node_is_refused_naming_the_nodes(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    from llmexplore.benchmarks.grids.runners import slurm
    from llmexplore.benchmarks.grids.runners.slurm_queue import node_limits

    run = fake_command([(0, "n1|2|21694\nn2|2|21694\nn3|4+|8000\nodd|1|N/A\n")])
    nodes = node_limits("debug", run=run)
    assert run.calls[0][-1] == "--partition=debug"
    assert [(n.name, n.cpus, n.memory_mb) for n in nodes] == [("n1", 2, 21694), ("n2", 2, 21694), ("n3", 4, 8000)]
    monkeypatch.setattr(slurm, "node_limits", lambda partition: nodes)
    grid = load_grid(grid_file(tmp_path, """
        name: g
        suite: {resources: {cpus: 4, memory_gb: 16, time_minutes: 30}}
        set: {method: none}
    """))
    with pytest.raises(ConfigError) as err:
        slurm.check_node_limits(grid, SlurmOptions(partition="debug"))
    assert "needs a job of 4 CPUs and 16.0 GB, more than any node of partition debug has" in str(err.value)
    assert "n3 (4 CPUs, 7.8 GB)" in str(err.value) and "n1 (2 CPUs, 21.2 GB)" in str(err.value)
    fits = load_grid(grid_file(tmp_path, """
        name: g
        suite: {resources: {cpus: 2, memory_gb: 8, time_minutes: 30}}
        vary: {seed: [0, 1]}
        set: {method: none}
    """))
    slurm.check_node_limits(fits, SlurmOptions(partition="debug"))  # n1 holds one such cell per job
    with pytest.raises(ConfigError, match=r"4 CPUs and 16.0 GB \(2 cells packed\)"):
        slurm.check_node_limits(fits, SlurmOptions(partition="debug", pack=2))


def test_dry_run_jobs_are_the_scripts_submitit_writes(tmp_path):
    pytest.importorskip("submitit")
    from llmexplore.benchmarks.grids.runners.slurm import job_parameters, planned_jobs, sbatch_script

    grid = load_grid(grid_file(tmp_path, """
        name: g
        suite: {resources: {cpus: 1, memory_gb: 2, time_minutes: 30}}
        vary: {seed: [0, 1, 2]}
        set: {method: none}
    """), tmp_path / "out")
    options = SlurmOptions(partition="debug", pack=2)
    jobs = planned_jobs(grid, options)
    assert [cells for cells, _ in jobs] == [[c.id for c in grid.cells[:2]], [grid.cells[2].id]]
    folder = (tmp_path / "out" / "slurm" / "%j").absolute()
    assert jobs[0][1] == sbatch_script(job_parameters(grid.cells[0].resources, 2, options, "llmexplore-g"), folder,
                                       sys.executable)
    assert "#SBATCH --cpus-per-task=2" in jobs[0][1] and "#SBATCH --cpus-per-task=1" in jobs[1][1]
    assert f"--output={folder}/%j_0_log.out" in jobs[0][1] and f"{sys.executable} -u -m submitit" in jobs[0][1]


# -- the LM server -----------------------------------------------------------------------------
def test_lm_check_against_a_real_server():
    pytest.importorskip("openai")
    from tests.helpers.lm_server import ServerProcess

    lm_endpoint.check_lm_endpoint(LMConfig())  # the embedded oracle needs no server
    with ServerProcess() as server:
        lm_endpoint.check_lm_endpoint(LMConfig(backend="openai", base_url=server.base_url, model=server.model))
        with pytest.raises(UserError, match="does not serve model 'llama'"):
            lm_endpoint.check_lm_endpoint(LMConfig(backend="openai", base_url=server.base_url, model="llama"))
        port = server.port
    with pytest.raises(UserError, match="cannot reach the LM server"):
        lm_endpoint.check_lm_endpoint(LMConfig(backend="openai", base_url=f"http://127.0.0.1:{port}/v1",
                                               model=server.model, timeout_s=2))


def test_a_backend_that_fails_its_model_check_leaves_no_loop_thread_or_client_open():
    pytest.importorskip("openai")
    import threading

    from llmexplore.lm.backends.openai_backend import OpenAIBackend
    from tests.helpers.lm_server import ServerProcess

    def loop_threads() -> int:
        return sum(t.name == "openai-backend" and t.is_alive() for t in threading.enumerate())

    before = loop_threads()
    with ServerProcess() as server:
        with pytest.raises(UserError, match="does not serve model 'llama'"):
            OpenAIBackend(base_url=server.base_url, model="llama")
        assert loop_threads() == before  # the constructor that raised closed what it had opened
        backend = OpenAIBackend(base_url=server.base_url, model=server.model)
        assert loop_threads() == before + 1
        backend.close()
    assert loop_threads() == before


def test_runner_checks_the_lm_server_before_any_cell_starts(tmp_path, monkeypatch):
    pytest.importorskip("openai")
    grid = load_grid(grid_file(tmp_path, """
        name: g
        lm: {backend: openai, base_url: "http://127.0.0.1:9/v1", model: llama, timeout_s: 2}
        vary: {method: [none, rnd]}
    """), tmp_path / "out")
    assert all(c.spec.lm.base_url == "http://127.0.0.1:9/v1" for c in grid.cells)
    with pytest.raises(UserError, match="cannot reach the LM server at http://127.0.0.1:9/v1"):
        GridRunner(grid, LocalBackend(jobs=2)).run()
    assert not (tmp_path / "out" / "runs").exists()


def test_loopback_endpoints_are_refused_where_cells_run_elsewhere(tmp_path):
    assert lm_endpoint.is_loopback("http://localhost:8000/v1") and lm_endpoint.is_loopback("http://127.0.0.1:8000")
    assert not lm_endpoint.is_loopback("http://gpu-07:8000/v1") and not lm_endpoint.is_loopback(None)
    grid = load_grid(grid_file(tmp_path, """
        name: g
        lm: {backend: openai, base_url: "http://127.0.0.1:8000/v1", model: llama}
        set: {method: none}
    """))
    with pytest.raises(lm_endpoint.LMEndpointError, match="names this machine"):
        lm_endpoint.refuse_loopback(grid.cells, "SLURM compute nodes")


# -- the launcher ------------------------------------------------------------------------------
#: a stand-in cell: records its start, saves on Ctrl-C/SIGTERM like `llmexplore run`, sleeps
FAKE_CELL = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from llmexplore.benchmarks.grids.runners.launch import honour_parent_death, stop_on_sigterm
    run_dir = Path(sys.argv[1])
    stop_on_sigterm(); honour_parent_death()
    # written whole, then renamed into place: a test that sees the file reads both numbers (CI-like load once
    # showed it empty between write_text's open and its write)
    (run_dir / "started.part").write_text(f"{os.getpid()} {os.getppid()}")
    os.replace(run_dir / "started.part", run_dir / "started")
    try:
        time.sleep(float(sys.argv[2]))
    except KeyboardInterrupt:
        time.sleep(0.5)  # "writing a checkpoint"
        (run_dir / "saved").write_text("yes")
        sys.exit(1)
""")


def fake_launch(run_dir: Path, seconds: float, exit_file: Path | None = None, gpus: float = 0) -> CellLaunch:
    run_dir.mkdir(parents=True, exist_ok=True)
    return CellLaunch(cell_id=run_dir.name, run_dir=str(run_dir), args=("-c", FAKE_CELL, str(run_dir), str(seconds)),
                      attempt=1, gpus=gpus, exit_file=str(exit_file) if exit_file else None, backend="test",
                      env={"PYTHONPATH": str(REPO)})


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_cells_run_report_exit_codes_and_stop_with_a_grace_period(tmp_path):
    quick, slow = fake_launch(tmp_path / "quick", 0.1, tmp_path / "quick.json"), fake_launch(tmp_path / "slow", 300)
    processes = CellProcesses([quick, slow], stop_grace=10)
    import threading

    def stop_when_slow_runs():
        wait_for(lambda: (tmp_path / "slow" / "started").exists() and read_exit_file(tmp_path / "quick.json") == 0)
        assert cell_process(tmp_path / "slow") is not None  # the process file names the running cell
        processes.stop(10)

    stopper = threading.Thread(target=stop_when_slow_runs)
    stopper.start()
    codes = processes.run()
    stopper.join()
    assert codes == {"quick": 0, "slow": 1}
    assert (tmp_path / "slow" / "saved").exists(), "SIGINT first, so the cell can checkpoint"
    assert not (tmp_path / "slow" / PROCESS_FILE).exists() and cell_process(tmp_path / "slow") is None
    assert "===== attempt 1 on" in (tmp_path / "slow" / "cell.log").read_text()


def test_a_cell_whose_launcher_is_killed_checkpoints_and_exits(tmp_path):
    """The Ray worker (or job) running a cell dies: the cell gets SIGTERM, saves, and is gone; the next
    attempt on this machine waits for it rather than running beside it."""
    launcher = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from llmexplore.benchmarks.grids.runners.launch import CellLaunch, run_cells
        run_dir = Path({str(tmp_path / 'cell')!r}); run_dir.mkdir()
        run_cells([CellLaunch(cell_id="c", run_dir=str(run_dir), args=("-c", {FAKE_CELL!r}, str(run_dir), "300"),
                              attempt=1, env={{"PYTHONPATH": {str(REPO)!r}}})])
    """)
    proc = subprocess.Popen([sys.executable, "-c", launcher], start_new_session=True)
    started = tmp_path / "cell" / "started"
    try:
        wait_for(started.exists)
        cell_pid, parent = map(int, started.read_text().split())
        assert parent == proc.pid
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    wait_for_cell_process(tmp_path / "cell", timeout=20)  # what the next attempt does first
    assert (tmp_path / "cell" / "saved").exists()
    assert not Path(f"/proc/{cell_pid}").exists() or "Z" in Path(f"/proc/{cell_pid}/status").read_text().split("State:")[1][:4]


def test_gpus_are_hidden_from_cpu_cells_and_split_between_packed_cells(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    one, two, cpu = (fake_launch(tmp_path / n, 1, gpus=g) for n, g in (("a", 1), ("b", 2), ("c", 0)))
    assert _gpu_slices([one, two, cpu]) == ["0", "1,2", ""]
    assert _gpu_slices([two]) == [None]  # a lone cell keeps what its scheduler gave it
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _gpu_slices([cpu]) == [""]


def test_a_job_warned_of_its_time_limit_checkpoints_its_cells_and_requeues(tmp_path):
    """submitit's local executor, real signals: the warning (USR2) makes CellBatch stop the cell, which
    saves; the job requeues and runs the cell again, which this time finishes."""
    submitit = pytest.importorskip("submitit")
    from llmexplore.benchmarks.grids.runners.slurm_job import CellBatch

    run_dir = tmp_path / "cell"
    resumable = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        run_dir = Path(sys.argv[1])
        if (run_dir / "saved").exists():
            (run_dir / "resumed").write_text("yes"); sys.exit(0)
    """) + FAKE_CELL
    launch = CellLaunch(cell_id="c", run_dir=str(run_dir), args=("-c", resumable, str(run_dir), "300"), attempt=1,
                        exit_file=str(tmp_path / "exit.json"), env={"PYTHONPATH": str(REPO)})
    run_dir.mkdir()
    executor = submitit.LocalExecutor(tmp_path / "jobs")
    executor.update_parameters(timeout_min=60, signal_delay_s=30)
    job = executor.submit(CellBatch([launch], stop_grace=20))
    wait_for((run_dir / "started").exists, 60)
    job_process = int((run_dir / "started").read_text().split()[1])
    assert read_exit_file(tmp_path / "exit.json") is None
    os.kill(job_process, signal.SIGUSR2)  # what SLURM sends signal_delay_s before the limit (or on preemption)
    assert job.result() == {"c": 0}
    assert (run_dir / "saved").exists() and (run_dir / "resumed").exists()
    assert read_exit_file(tmp_path / "exit.json") == 0
    logs = "".join(p.read_text() for p in (tmp_path / "jobs").glob("*_log.*"))
    assert "Requeued" in logs


def test_a_busy_machine_is_named_before_cells_get_several_threads_each(tmp_path, monkeypatch):
    """Cells split the cores of this grid only: on a machine other work keeps busy, several torch threads
    per cell spin against it (6x slower measured), so the grid says how to give each cell one thread."""
    from llmexplore.benchmarks.grids.runners import local

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(local, "usable_cores", lambda: 4)
    monkeypatch.setattr(local, "runs_on_this_machine", lambda: 0)
    open_cells = load_grid(grid_file(tmp_path, """
        name: g
        set: {method: none}
    """), tmp_path / "out").cells
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 3.0, 2.0))
    warning = local.busy_machine_warning(open_cells, jobs=1)
    assert warning is not None and "load average 3.5 on 4 cores" in warning and "torch_threads: 1" in warning
    assert local.busy_machine_warning(open_cells, jobs=4) is None  # one thread each already
    (tmp_path / "set").mkdir()
    set_cells = load_grid(grid_file(tmp_path / "set", """
        name: g
        set: {method: none, train: {torch_threads: 1}}
    """), tmp_path / "set" / "out").cells
    assert local.busy_machine_warning(set_cells, jobs=1) is None
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.3, 0.3))
    assert local.busy_machine_warning(open_cells, jobs=1) is None


def test_cells_split_the_cores_with_runs_other_grids_started(tmp_path, monkeypatch):
    """Two grids started side by side on 2 cores each gave their cell 2 torch threads: 45-80 steps/s per
    Crafter cell against about 700 with one thread each. A cell's share now counts every run training on
    the machine as it starts, this grid's or not."""
    from llmexplore.benchmarks.grids.runners import local

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(local, "usable_cores", lambda: 4)
    monkeypatch.setattr(local, "runs_on_this_machine", lambda: 0)
    assert local.thread_env(jobs=1)["OMP_NUM_THREADS"] == "4"
    assert local.thread_env(jobs=2)["OMP_NUM_THREADS"] == "2"
    monkeypatch.setattr(local, "runs_on_this_machine", lambda: 1)  # another grid's cell trains
    assert local.thread_env(jobs=1)["OMP_NUM_THREADS"] == "2"
    assert local.thread_env(jobs=1, cpus=3)["OMP_NUM_THREADS"] == "3"  # declared cpus win
    monkeypatch.setattr(local, "runs_on_this_machine", lambda: 7)
    assert local.thread_env(jobs=2)["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert local.thread_env(jobs=1)["OMP_NUM_THREADS"] == "2"  # the caller's setting is kept


def test_runs_on_this_machine_are_told_by_their_command_line(tmp_path):
    """Real processes: ``python -m llmexplore run --out DIR`` is keyed by its folder (its forked workers
    repeat the command line and count once), ``llmexplore run`` without ``--out`` by its process group;
    other commands of the package and other programs are not runs."""
    from llmexplore.benchmarks.grids.runners import local

    sleep = "import time; time.sleep(60)"
    commands = {
        "cell": [sys.executable, "-c", sleep, "llmexplore", "run", "--out", str(tmp_path / "a"), "--quiet"],
        "worker of the cell": [sys.executable, "-c", sleep, "llmexplore", "run", "--out", str(tmp_path / "a")],
        "by hand": [sys.executable, "-c", sleep, str(tmp_path / "bin" / "llmexplore"), "run", "--method", "none"],
        "grid": [sys.executable, "-c", sleep, "llmexplore", "grid", "g.yaml", "--out", str(tmp_path / "b")],
        "other": [sys.executable, "-c", sleep, "run", "--out", str(tmp_path / "c")],
    }
    processes = {name: subprocess.Popen(cmd, start_new_session=True) for name, cmd in commands.items()}
    try:
        keys = {name: local._run_key(p.pid) for name, p in processes.items()}
    finally:
        for p in processes.values():
            p.kill()
            p.wait()
    assert keys["cell"] == keys["worker of the cell"] == str((tmp_path / "a").resolve())
    assert keys["by hand"] == f"group {processes['by hand'].pid}"
    assert keys["grid"] is None and keys["other"] is None
    assert local._run_key(processes["cell"].pid) is None  # ended
