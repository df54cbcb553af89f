"""Run cells as local processes, N at a time."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar, Iterable

from llmexplore.benchmarks.grids.grid_file import Cell, Grid
from llmexplore.benchmarks.grids.runners.base import CELL_LOG, CellJob, GridBackend, cell_command
from llmexplore.benchmarks.grids.runners.launch import PARENT_ENV
from llmexplore.errors import ConfigError


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _run_key(pid: int) -> str | None:
    """The run a process trains when it is an ``llmexplore run`` (its ``--out`` folder, else its process
    group: sample-factory's forked workers repeat their parent's command line), else None."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    names = [Path(a).name for a in args]
    at = next((i for i, n in enumerate(names) if n == "llmexplore"), None)
    if at is None or "run" not in args[at + 1:at + 2]:
        return None
    if "--out" in args[at + 2:-1]:
        return str(Path(args[args.index("--out", at) + 1]).resolve())
    try:
        return f"group {os.getpgid(pid)}"
    except OSError:
        return None


def runs_on_this_machine() -> int:
    """How many ``llmexplore run`` processes train on this machine now, whoever started them (this grid's
    cells, another grid's, a run by hand); 0 where /proc cannot be read."""
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    keys = {_run_key(int(p.name)) for p in proc.iterdir() if p.name.isdigit()}
    keys.discard(None)
    return len(keys)


def cells_sharing_cores(jobs: int) -> int:
    """How many training processes a cell starting now shares the cores with, itself included: this grid's
    parallel cells or every run already training on the machine plus this one, whichever is more."""
    return max(1, jobs, runs_on_this_machine() + 1)


def thread_env(jobs: int, cpus: int | None = None) -> dict[str, str]:
    """Split the machine's cores between the cells that will train on it: torch in every cell otherwise
    uses all cores, and N cells then fight over them (measured: several times slower). The split counts
    this grid's parallel cells and every run already training on the machine (another grid's included),
    whichever is more, as this cell starts. A cell whose suite declares ``resources.cpus`` gets that many
    threads, as on Ray and SLURM."""
    threads = str(cpus if cpus is not None else max(1, usable_cores() // cells_sharing_cores(jobs)))
    env = os.environ.copy()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(var, threads)
    return env


#: a 1-minute load average at least this share of the cores counts as a machine already in use
BUSY_LOAD_SHARE = 0.5


def busy_machine_warning(cells: Iterable[Cell], jobs: int) -> str | None:
    """A warning when cells are about to get several torch threads each on a machine that other work
    already keeps busy. The split counts llmexplore's runs only (``thread_env``); several threads per
    process spin against every other process on the cores (measured on 2 cores with three grids at once:
    the published Crafter update took 160 s with 2 threads per cell, 24 s with 1)."""
    cores = usable_cores()
    threads = cores // cells_sharing_cores(jobs)
    if threads <= 1 or "OMP_NUM_THREADS" in os.environ or not hasattr(os, "getloadavg"):
        return None  # one thread each already, or the user's OMP_NUM_THREADS decides (``thread_env``)
    if not any(c.run is not None and c.run.train.torch_threads is None and "cpus" not in c.resources.model_fields_set
               for c in cells):
        return None  # every cell's threads are set
    load = os.getloadavg()[0]
    if load < max(1.0, BUSY_LOAD_SHARE * cores):
        return None
    return (f"llmexplore grid: this machine is already busy (load average {load:.1f} on {cores} cores) and each "
            f"cell will use {threads} torch threads; if other heavy work keeps running beside this grid, set "
            f"`train: {{torch_threads: 1}}` in the grid's defaults (it may be changed when the grid resumes)")


def check_local_gpus(cells: Iterable[Cell], backend: str = "local") -> None:
    """Refuse cells that ask for more GPUs than this machine has, before any of them starts."""
    wanted = [c for c in cells if c.resources.gpus > 0]
    if not wanted:
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    cell = max(wanted, key=lambda c: c.resources.gpus)
    if math.ceil(cell.resources.gpus) > count:
        raise ConfigError(
            f"cell {cell.id} asks for {cell.resources.gpus:g} GPU(s) (suite.resources.gpus, or train.device: gpu) "
            f"but this machine has {count or 'no'} CUDA device{'' if count == 1 else 's'}",
            hint=f"the {backend} backend runs cells here: use a GPU machine, `--backend ray` or `--backend slurm` "
                 f"with GPU nodes, or set suite.resources.gpus: 0 and train.device: cpu",
        )


class LocalJob(CellJob):
    def __init__(self, cell: Cell, attempt: int, env: dict[str, str] | None = None):
        log = open(cell.run_dir / CELL_LOG, "ab")
        log.write(f"\n===== attempt {attempt} at {time.strftime('%Y-%m-%d %H:%M:%S')} =====\n".encode())
        log.flush()
        # its own session: a terminal Ctrl-C reaches the runner, which stops cells in order
        # and it dies with the runner: `llmexplore run` asks for SIGTERM (a checkpoint, then exit) when
        # its parent dies, even by SIGKILL (launch.honour_parent_death)
        env = {**(env or os.environ), PARENT_ENV: str(os.getpid())}
        self.process = subprocess.Popen(cell_command(cell), stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True, env=env)
        self._log = log

    def poll(self) -> int | None:
        """The process's exit code once it has ended (its log file is closed then), else None."""
        code = self.process.poll()
        if code is not None:
            self._log.close()
        return code

    def cancel(self, grace_seconds: float) -> None:
        """SIGINT to the cell's process group (it checkpoints and exits); SIGKILL after ``grace_seconds``."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)  # sample-factory checkpoints and exits
        try:
            self.process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._log.close()


class LocalBackend(GridBackend):
    name: ClassVar[str] = "local"

    def __init__(self, jobs: int | None = 1):
        self.jobs = max(1, int(jobs or 1))

    @property
    def capacity(self) -> int:
        """``jobs``: how many cells run side by side on this machine."""
        return self.jobs

    def check(self, grid: Grid) -> None:
        """Refuse cells that want more GPUs than this machine has; warn when cells with several threads each
        would share a machine other work keeps busy."""
        check_local_gpus(grid.cells)
        warning = busy_machine_warning(grid.cells, self.jobs)
        if warning:
            print(warning, file=sys.stderr, flush=True)

    def cell_env(self, cell: Cell) -> dict[str, str]:
        """This process's environment with torch's thread counts set (ones already set are kept): the cell's
        declared ``resources.cpus``, else an equal share of the cores."""
        declared = cell.resources.cpus if "cpus" in cell.resources.model_fields_set else None
        return thread_env(self.jobs, declared)

    def start(self, cell: Cell, attempt: int) -> LocalJob:
        """Start the cell as a child process in its own session, its output appended to ``cell.log``."""
        return LocalJob(cell, attempt, self.cell_env(cell))
