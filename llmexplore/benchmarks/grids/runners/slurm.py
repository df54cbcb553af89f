"""Run cells as SLURM jobs through submitit: one cell per job, or several packed into one.

A job asks SLURM for its cells' resources (``job_parameters``: partition, time, CPUs, GPUs,
memory, requeue) and runs them side by side on its node (``slurm_job.CellBatch``). Each
cell's exit code comes back through a small file beside the job logs, so a cell that ends
early in a packed job is seen at once. Time limits and preemption:

- SLURM sends a warning signal ``signal_delay_s`` before the time limit (and on preemption
  where the cluster is set up to); submitit then calls ``CellBatch.checkpoint``, which stops
  the cells so they checkpoint, and requeues the job, which resumes them. A requeue is not a
  failed attempt.
- A job cancelled or preempted without warning gets SIGTERM, which cells take as Ctrl-C
  (they checkpoint); with ``requeue`` SLURM puts the job back in the queue, else the job
  ends, the cell counts as failed, and the runner's retry resumes it.

``executor: local`` runs the very same jobs through submitit's local executor (processes on
this machine), which is how the tests exercise submission, cancellation and requeueing.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from llmexplore.benchmarks.grids.backend_options import SlurmOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Cell, Grid, Resources, safe_name
from llmexplore.benchmarks.grids.runners.base import CellJob, GridBackend, cell_command
from llmexplore.benchmarks.grids.runners.launch import CellLaunch, read_exit_file, wait_for_cell_process
from llmexplore.benchmarks.grids.runners.lm_endpoint import refuse_loopback
from llmexplore.benchmarks.grids.runners.local import check_local_gpus
from llmexplore.benchmarks.grids.runners.slurm_job import CellBatch
from llmexplore.errors import ConfigError, require

submitit = require("submitit", "distributed", "the SLURM grid backend")
#: how long a job may stay PREEMPTED (waiting to be requeued) before its cells count as failed
PREEMPTED_GRACE_S = 600.0


# -- what a job asks for ------------------------------------------------------------------------
def memory_flag(gb: float) -> str:
    return f"{int(gb)}G" if float(gb).is_integer() else f"{math.ceil(gb * 1024)}M"


def job_parameters(resources: Resources, cells: int, options: SlurmOptions, name: str) -> dict[str, Any]:
    """sbatch parameters (submitit's names) of a job that runs ``cells`` cells with these resources."""
    extra: dict[str, Any] = {"requeue": True} if options.requeue else {"no-requeue": True}
    params: dict[str, Any] = {
        "job_name": name,
        "time": options.time_minutes or resources.time_minutes,
        "nodes": 1,
        "ntasks_per_node": 1,
        "cpus_per_task": resources.cpus * cells,
        "mem": memory_flag(resources.memory_gb * cells),
        "signal_delay_s": options.signal_delay_s,
    }
    gpus = math.ceil(resources.gpus) * cells
    if gpus:
        params["gpus_per_node"] = f"{options.gpu_type}:{gpus}" if options.gpu_type else gpus
    for key in ("partition", "account", "qos", "constraint", "exclude"):
        if getattr(options, key):
            params[key] = getattr(options, key)
    if options.setup:
        params["setup"] = list(options.setup)
    extra.update(options.sbatch)
    params["additional_parameters"] = extra
    return params


def local_parameters(resources: Resources, cells: int, options: SlurmOptions) -> dict[str, Any]:
    """The same job for submitit's local executor (time limit and warning signal included)."""
    params: dict[str, Any] = {"timeout_min": options.time_minutes or resources.time_minutes,
                              "gpus_per_node": math.ceil(resources.gpus) * cells,
                              "signal_delay_s": options.signal_delay_s}
    if options.setup:
        params["setup"] = list(options.setup)
    return params


def sbatch_script(params: dict[str, Any], folder: str | Path, python: str = "python") -> str:
    """The batch script submitit writes for these parameters (for review and tests)."""
    from submitit.slurm.slurm import _make_sbatch_string  # the renderer SlurmExecutor itself uses

    command = f"{python} -u -m submitit.core._submit {folder}"
    return _make_sbatch_string(command=command, folder=folder, **params)


# -- the backend --------------------------------------------------------------------------------
class SlurmCellJob(CellJob):
    def __init__(self, backend: "SlurmBackend", cell: Cell, launch: CellLaunch):
        self.backend = backend
        self.cell = cell
        self.launch = launch
        self.job: Any = None  # the submitit job, once submitted
        self.submit_error: str | None = None
        self.code: int | None = None
        self._preempted_since: float | None = None

    def poll(self) -> int | None:
        if self.code is None:
            self.code = self._poll()
        return self.code

    def _poll(self) -> int | None:
        if self.job is None and self.submit_error is None:
            self.backend.flush()
        if self.submit_error is not None:
            self.reason = f"submitting the job failed: {self.submit_error}"
            return 1
        code = read_exit_file(self.launch.exit_file)
        if code is not None:
            return code
        if not self._job_done():
            return None
        code = read_exit_file(self.launch.exit_file)  # written just before the job ended
        if code is None:
            self.reason = f"{self.backend.kind} job {self.job.job_id} ended ({self._state()}) before the cell did"
        return 1 if code is None else code

    def _job_done(self) -> bool:
        try:
            if self.job.done():
                return True
        except Exception:  # noqa: BLE001 - a flaky sacct; ask again next round
            return False
        return self._preempted_for_good()

    def _preempted_for_good(self) -> bool:
        """submitit counts PREEMPTED as unfinished (the job may come back); one that stays preempted
        (requeue off, or a cluster that cancels preempted jobs) has ended for the runner."""
        if self._state().upper() != "PREEMPTED":
            self._preempted_since = None
            return False
        self._preempted_since = self._preempted_since or time.time()
        return time.time() - self._preempted_since > PREEMPTED_GRACE_S

    def _state(self) -> str:
        try:
            return str(self.job.state)
        except Exception:  # noqa: BLE001
            return "UNKNOWN"

    def cancel(self, grace_seconds: float) -> None:
        if self.job is None:
            self.backend.drop(self)
            return
        if self.code is None and not self._job_done():
            self.job.cancel(check=False)  # scancel; the local executor interrupts the job's process
        if self.backend.options.executor == "local":
            # no SLURM here to clean up after the job: see that its cells have saved and gone
            deadline = time.time() + grace_seconds + 15
            while time.time() < deadline and not self._job_done():
                time.sleep(0.2)
            wait_for_cell_process(self.cell.run_dir, grace_seconds)

    def describe(self) -> str:
        if self.job is None:
            return "to submit"
        return f"{self.backend.kind} job {self.job.job_id} {self._state().lower()}"


class SlurmBackend(GridBackend):
    name: ClassVar[str] = "slurm"

    def __init__(self, jobs: int | None = None, **options: Any):
        self.options: SlurmOptions = parse_options("slurm", options)  # type: ignore[assignment]
        self.jobs = jobs
        self._capacity = max(1, jobs or 1)
        self._folder: Path | None = None
        self._grid_name = "grid"
        self._unsubmitted: list[SlurmCellJob] = []
        self._submitted: list[SlurmCellJob] = []

    @property
    def kind(self) -> str:
        return "SLURM" if self.options.executor == "slurm" else "local submitit"

    @property
    def capacity(self) -> int:
        return self._capacity

    def check(self, grid: Grid) -> None:
        self._folder = Path(self.options.folder).expanduser().resolve() if self.options.folder else grid.out_dir / "slurm"
        self._grid_name = safe_name(grid.name)
        if self.options.executor == "slurm":
            if shutil.which("sbatch") is None or shutil.which("srun") is None:
                raise ConfigError("the slurm backend needs SLURM's sbatch and srun, which are not on this machine",
                                  hint="run the grid from a login node of the cluster, or try it here with "
                                       "-b executor=local (the same jobs as local processes)")
            refuse_loopback(grid.cells, "SLURM compute nodes")
            self._capacity = self.jobs or len(grid.cells)  # SLURM queues what does not fit yet
        else:
            check_local_gpus(grid.cells, "slurm (executor: local)")
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            widest = max(c.resources.cpus for c in grid.cells)
            self._capacity = self.jobs or max(1, cores // widest)
        (self._folder / "exits").mkdir(parents=True, exist_ok=True)

    def start(self, cell: Cell, attempt: int) -> SlurmCellJob:
        assert self._folder is not None, "check() first"
        exit_file = self._folder / "exits" / f"{safe_name(cell.id)}.attempt{attempt}.{uuid.uuid4().hex[:8]}.json"
        launch = CellLaunch(cell_id=cell.id, run_dir=str(cell.run_dir), args=tuple(cell_command(cell)[1:]),
                            attempt=attempt, cpus=cell.resources.cpus, gpus=cell.resources.gpus,
                            exit_file=str(exit_file), backend=f"slurm/{self.options.executor}")
        job = SlurmCellJob(self, cell, launch)
        self._unsubmitted.append(job)
        if sum(_key(j) == _key(job) for j in self._unsubmitted) >= self.options.pack:
            self.flush()
        return job

    def flush(self) -> None:
        """Submit every cell started so far: packs of up to ``pack`` cells with equal resources; packs
        with equal parameters go in as one job array."""
        groups: dict[tuple, list[SlurmCellJob]] = {}
        for job in self._unsubmitted:
            groups.setdefault(_key(job), []).append(job)
        self._unsubmitted = []
        for members in groups.values():
            packs = [members[i:i + self.options.pack] for i in range(0, len(members), self.options.pack)]
            by_size: dict[int, list[list[SlurmCellJob]]] = {}
            for pack in packs:
                by_size.setdefault(len(pack), []).append(pack)
            for size, same in by_size.items():
                self._submit(same, members[0].cell.resources, size)

    def _submit(self, packs: list[list[SlurmCellJob]], resources: Resources, size: int) -> None:
        if self.options.executor == "slurm":
            params = job_parameters(resources, size, self.options, f"llmexplore-{self._grid_name}")
        else:
            params = local_parameters(resources, size, self.options)
        batches = [CellBatch([j.launch for j in pack], self.options.stop_grace_s) for pack in packs]
        try:
            executor = self._executor()
            executor.update_parameters(**params)
            submitted = executor.submit_array(batches) if len(batches) > 1 else [executor.submit(batches[0])]
        except Exception as exc:  # noqa: BLE001 - sbatch refused: the cells fail, and may be retried
            for pack in packs:
                for job in pack:
                    job.submit_error = f"{type(exc).__name__}: {str(exc).strip()[:400]}"
            return
        for pack, sub in zip(packs, submitted):
            for job in pack:
                job.job = sub
                self._submitted.append(job)

    def _executor(self) -> Any:
        """A fresh executor per submission: submitit's executors keep parameters between updates."""
        if self.options.executor == "slurm":
            return submitit.SlurmExecutor(self._folder / "%j", max_num_timeout=self.options.max_requeues,
                                          python=self.options.python)
        # one folder: the local executor would create a folder literally named %j
        return submitit.LocalExecutor(self._folder / "jobs", max_num_timeout=self.options.max_requeues,
                                      python=self.options.python)

    def drop(self, job: SlurmCellJob) -> None:
        if job in self._unsubmitted:
            self._unsubmitted.remove(job)

    def close(self) -> None:
        """Leave no job behind: cancel any job with a cell the runner did not see end (after an error
        of its own). A job whose cells all ended is left to finish writing its result."""
        self._unsubmitted = []
        open_jobs = {id(j.job): j.job for j in self._submitted if j.code is None and j.job is not None}
        for job in open_jobs.values():
            try:
                if not job.done():
                    job.cancel(check=False)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        self._submitted = []


def _key(job: SlurmCellJob) -> tuple:
    r = job.cell.resources
    return (r.cpus, r.gpus, r.memory_gb, r.time_minutes)
