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

On a real cluster, job states come from squeue (``slurm_queue``), not from submitit's sacct
calls, which fail on clusters without accounting; each change of a job's state is reported
once. Every submission is noted in ``<folder>/jobs.json``, so that a rerun of a grid whose
driver was killed takes over the jobs still queued or running instead of submitting its
cells a second time.

``executor: local`` runs the very same jobs through submitit's local executor (processes on
this machine), which is how the tests exercise submission, cancellation and requeueing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, ClassVar

from llmexplore.atomic import atomic_write_json
from llmexplore.benchmarks.grids.backend_options import SlurmOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Cell, Grid, Resources, safe_name
from llmexplore.benchmarks.grids.runners.base import CellJob, GridBackend, cell_command
from llmexplore.benchmarks.grids.runners.launch import CellLaunch, read_exit_file, wait_for_cell_process
from llmexplore.benchmarks.grids.runners.lm_endpoint import refuse_loopback
from llmexplore.benchmarks.grids.runners.local import check_local_gpus
from llmexplore.benchmarks.grids.runners.slurm_job import CellBatch
from llmexplore.benchmarks.grids.runners.slurm_queue import JobState, SlurmQueue, node_limits, quiet_submitit
from llmexplore.errors import ConfigError, require

submitit = require("submitit", "distributed", "the SLURM grid backend")
#: how long a job may stay PREEMPTED (waiting to be requeued) before its cells count as failed
PREEMPTED_GRACE_S = 600.0
#: in the job folder: cell id -> the job that last ran it (read by a rerun, to take over live jobs)
LEDGER_FILE = "jobs.json"


# -- what a job asks for ------------------------------------------------------------------------
def memory_flag(gb: float) -> str:
    """sbatch's ``--mem`` for ``gb`` GB: whole GB as ``<N>G``, else rounded up to whole MB (``<N>M``)."""
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

    command = f"{python} -u -m submitit.core._submit {shlex.quote(str(folder))}"
    return _make_sbatch_string(command=command, folder=folder, **params)


def job_folder(grid: Grid, options: SlurmOptions) -> Path:
    """Where job scripts and logs go (submitit makes the path absolute, so do we)."""
    base = Path(options.folder).expanduser().resolve() if options.folder else grid.out_dir / "slurm"
    return base.absolute()


def node_python(options: SlurmOptions) -> str:
    """The interpreter command the job script runs (submitit's default: this one)."""
    return options.python or shlex.quote(sys.executable)


def planned_jobs(grid: Grid, options: SlurmOptions) -> list[tuple[list[str], str]]:
    """The jobs a fresh run of the grid submits: (cell ids, sbatch script) per job, in order. Cells
    with equal resources are packed ``pack`` at a time (a job array's script adds --array)."""
    groups: dict[tuple, list[Cell]] = {}
    for cell in grid.cells:
        groups.setdefault(_resource_key(cell.resources), []).append(cell)
    folder = job_folder(grid, options) / "%j"
    jobs = []
    for cells in groups.values():
        for i in range(0, len(cells), options.pack):
            pack = cells[i:i + options.pack]
            params = job_parameters(pack[0].resources, len(pack), options, f"llmexplore-{safe_name(grid.name)}")
            jobs.append(([c.id for c in pack], sbatch_script(params, folder, node_python(options))))
    return jobs


def check_node_limits(grid: Grid, options: SlurmOptions) -> None:
    """Refuse, before anything is submitted, a job that no node of the partition can hold (SLURM
    would keep it pending for ever, or refuse it one cell at a time)."""
    where = f"partition {options.partition}" if options.partition else "the cluster"
    try:
        nodes = node_limits(options.partition)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"sinfo could not list the nodes of {where}: {exc}",
                          hint="is the SLURM controller up? `scontrol ping` says") from None
    if not nodes:
        raise ConfigError(f"{where} has no nodes (sinfo lists none)", hint="name a partition with -b partition=...")
    groups: dict[tuple, list[Cell]] = {}
    for cell in grid.cells:
        groups.setdefault(_resource_key(cell.resources), []).append(cell)
    for cells in groups.values():
        size = min(options.pack, len(cells))
        r = cells[0].resources
        cpus, memory_mb = r.cpus * size, math.ceil(r.memory_gb * size * 1024)
        if any(n.cpus >= cpus and n.memory_mb >= memory_mb for n in nodes):
            continue
        largest = sorted(nodes, key=lambda n: (n.cpus, n.memory_mb), reverse=True)[:3]
        packed = f" ({size} cells packed)" if size > 1 else ""
        raise ConfigError(
            f"cell {cells[0].id} needs a job of {cpus} CPUs and {memory_mb / 1024:.1f} GB{packed}, more than any "
            f"node of {where} has: {', '.join(map(str, largest))}{' ...' if len(nodes) > 3 else ''}",
            hint="lower suite.resources (cpus, memory_gb) or pack, or choose larger nodes with -b partition=...")


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
        self._reported: str | None = None

    def poll(self) -> int | None:
        """The cell's exit code once known (kept from then on), from the exit file its launcher writes; 1,
        with ``reason``, when submitting failed or the job ended without one. Submits waiting packs first."""
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
        queue = self.backend.queue
        if queue is not None:
            state = queue.state(self.job.job_id)
            self._report(state)
            return state.ended or self._preempted_for_good(state.state)
        try:
            if self.job.done():
                return True
        except Exception:  # noqa: BLE001 - a flaky sacct; ask again next round
            return False
        return self._preempted_for_good(self._state())

    def _report(self, state: JobState) -> None:
        """One line per change of the job's state (not one per poll)."""
        if str(state) != self._reported:
            self._reported = str(state)
            self.backend.report(f"{self.cell.id}: SLURM job {self.job.job_id} {state}")

    def _preempted_for_good(self, state: str) -> bool:
        """submitit counts PREEMPTED as unfinished (the job may come back); one that stays preempted
        (requeue off, or a cluster that cancels preempted jobs) has ended for the runner."""
        if state.upper() != "PREEMPTED":
            self._preempted_since = None
            return False
        self._preempted_since = self._preempted_since or time.time()
        return time.time() - self._preempted_since > PREEMPTED_GRACE_S

    def _state(self) -> str:
        if self.backend.queue is not None:
            return str(self.backend.queue.state(self.job.job_id))
        try:
            return str(self.job.state)
        except Exception:  # noqa: BLE001
            return "UNKNOWN"

    def cancel(self, grace_seconds: float) -> None:
        """scancel the cell's job, which stops every cell packed into it; a cell not yet submitted is only
        dropped. With the local executor, also wait for the cells to save and exit."""
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
        """``to submit`` until the cell's job is submitted, then the job's id and its queue state."""
        if self.job is None:
            return "to submit"
        return f"{self.backend.kind} job {self.job.job_id} {self._state().lower()}"


class SlurmBackend(GridBackend):
    name: ClassVar[str] = "slurm"

    def __init__(self, jobs: int | None = None, report: Callable[[str], None] | None = None, **options: Any):
        self.options: SlurmOptions = parse_options("slurm", options)  # type: ignore[assignment]
        self.jobs = jobs
        self.report = report or _to_stderr
        #: job states on a real cluster (squeue); None with the local executor, where submitit knows them
        self.queue: SlurmQueue | None = SlurmQueue() if self.options.executor == "slurm" else None
        self._capacity = max(1, jobs or 1)
        self._folder: Path | None = None
        self._grid_name = "grid"
        self._unsubmitted: list[SlurmCellJob] = []
        self._submitted: list[SlurmCellJob] = []

    @property
    def kind(self) -> str:
        """What runs the jobs, for messages: ``SLURM``, or ``local submitit`` with the local executor."""
        return "SLURM" if self.options.executor == "slurm" else "local submitit"

    @property
    def capacity(self) -> int:
        """``jobs`` when given; else every cell on SLURM (its queue holds what does not fit yet), or this
        machine's cores over the widest cell's with the local executor (set by ``check``)."""
        return self._capacity

    def check(self, grid: Grid) -> None:
        """Create the job folder and refuse what cannot run: SLURM without sbatch or srun, a loopback LM
        address or cells larger than its nodes; locally, more GPUs than this machine has."""
        self._folder = job_folder(grid, self.options)
        self._grid_name = safe_name(grid.name)
        if self.options.executor == "slurm":
            if shutil.which("sbatch") is None or shutil.which("srun") is None:
                raise ConfigError("the slurm backend needs SLURM's sbatch and srun, which are not on this machine",
                                  hint="run the grid from a login node of the cluster, or try it here with "
                                       "-b executor=local (the same jobs as local processes)")
            refuse_loopback(grid.cells, "SLURM compute nodes")
            check_node_limits(grid, self.options)
            quiet_submitit()
            self._capacity = self.jobs or len(grid.cells)  # SLURM queues what does not fit yet
        else:
            check_local_gpus(grid.cells, "slurm (executor: local)")
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            widest = max(c.resources.cpus for c in grid.cells)
            self._capacity = self.jobs or max(1, cores // widest)
        (self._folder / "exits").mkdir(parents=True, exist_ok=True)

    def start(self, cell: Cell, attempt: int) -> SlurmCellJob:
        """Follow the job an earlier run of the grid left queued or running for the cell; else queue it for a
        pack, submitted once ``pack`` equal cells wait or at the next poll."""
        assert self._folder is not None, "check() first"
        exit_file = self._folder / "exits" / f"{safe_name(cell.id)}.attempt{attempt}.{uuid.uuid4().hex[:8]}.json"
        launch = CellLaunch(cell_id=cell.id, run_dir=str(cell.run_dir), args=tuple(cell_command(cell)[1:]),
                            attempt=attempt, cpus=cell.resources.cpus, gpus=cell.resources.gpus,
                            exit_file=str(exit_file), backend=f"slurm/{self.options.executor}")
        job = SlurmCellJob(self, cell, launch)
        if self._adopt(job):
            return job
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
            if self.queue is not None:
                self.queue.watch(sub.job_id)
        self._note_jobs([job for pack in packs for job in pack])

    # -- jobs that outlive the grid's driver ---------------------------------------------------------
    def _ledger(self) -> dict[str, Any]:
        try:
            found = json.loads((self._folder / LEDGER_FILE).read_text())
        except (OSError, ValueError, TypeError):
            return {}
        return found if isinstance(found, dict) else {}

    def _note_jobs(self, jobs: list[SlurmCellJob]) -> None:
        if self.queue is None or not jobs:
            return
        ledger = self._ledger()
        for job in jobs:
            ledger[job.cell.id] = {"job_id": str(job.job.job_id), "exit_file": job.launch.exit_file,
                                   "attempt": job.launch.attempt, "submitted": time.time()}
        atomic_write_json(self._folder / LEDGER_FILE, ledger)

    def _adopt(self, job: SlurmCellJob) -> bool:
        """Take over the cell's job from an earlier run of this grid when SLURM still has it queued
        or running (the driver was killed): submitting again would run the cell twice at once."""
        if self.queue is None:
            return False
        entry = self._ledger().get(job.cell.id)
        if not isinstance(entry, dict) or not entry.get("job_id") or not entry.get("exit_file"):
            return False
        job_id = str(entry["job_id"])
        state = self.queue.state(job_id)
        if state.ended or state.state == "PREEMPTED":
            return False
        job.launch = dataclasses.replace(job.launch, exit_file=str(entry["exit_file"]))
        job.job = submitit.SlurmJob(folder=self._folder / "%j", job_id=job_id)
        self._submitted.append(job)
        self.report(f"{job.cell.id}: SLURM job {job_id} of an earlier run is {state}; following it, not submitting again")
        job._reported = str(state)
        return True

    def _executor(self) -> Any:
        """A fresh executor per submission: submitit's executors keep parameters between updates."""
        if self.options.executor == "slurm":
            return submitit.SlurmExecutor(self._folder / "%j", max_num_timeout=self.options.max_requeues,
                                          python=self.options.python)
        # one folder: the local executor would create a folder literally named %j
        return submitit.LocalExecutor(self._folder / "jobs", max_num_timeout=self.options.max_requeues,
                                      python=self.options.python)

    def drop(self, job: SlurmCellJob) -> None:
        """Forget a cell that was never submitted (it was cancelled before its pack went in)."""
        if job in self._unsubmitted:
            self._unsubmitted.remove(job)

    def close(self) -> None:
        """Leave no job behind: cancel any job with a cell the runner did not see end (after an error
        of its own). A job whose cells all ended is left to finish writing its result."""
        self._unsubmitted = []
        open_jobs = {id(j.job): j for j in self._submitted if j.code is None and j.job is not None}
        for job in open_jobs.values():
            try:
                if not job._job_done():
                    job.job.cancel(check=False)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        self._submitted = []


def _key(job: SlurmCellJob) -> tuple:
    return _resource_key(job.cell.resources)


def _resource_key(r: Resources) -> tuple:
    return (r.cpus, r.gpus, r.memory_gb, r.time_minutes)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
