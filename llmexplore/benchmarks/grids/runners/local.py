"""Run cells as local processes, N at a time."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from typing import ClassVar, Iterable

from llmexplore.benchmarks.grids.grid_file import Cell, Grid
from llmexplore.benchmarks.grids.runners.base import CELL_LOG, CellJob, GridBackend, cell_command
from llmexplore.benchmarks.grids.runners.launch import PARENT_ENV
from llmexplore.errors import ConfigError


def thread_env(jobs: int, cpus: int | None = None) -> dict[str, str]:
    """Split the machine's cores between parallel cells: torch in every cell otherwise uses
    all cores, and N cells then fight over them (measured: several times slower). A cell
    whose suite declares ``resources.cpus`` gets that many threads, as on Ray and SLURM."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = str(cpus if cpus is not None else max(1, cores // max(1, jobs)))
    env = os.environ.copy()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(var, threads)
    return env


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
        code = self.process.poll()
        if code is not None:
            self._log.close()
        return code

    def cancel(self, grace_seconds: float) -> None:
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
        return self.jobs

    def check(self, grid: Grid) -> None:
        check_local_gpus(grid.cells)

    def cell_env(self, cell: Cell) -> dict[str, str]:
        declared = cell.resources.cpus if "cpus" in cell.resources.model_fields_set else None
        return thread_env(self.jobs, declared)

    def start(self, cell: Cell, attempt: int) -> LocalJob:
        return LocalJob(cell, attempt, self.cell_env(cell))
