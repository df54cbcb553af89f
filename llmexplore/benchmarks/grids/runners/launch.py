"""Runs cells on the machine a scheduler gave them (inside a Ray task or a SLURM job).

A cell is always the resumable command ``llmexplore run`` (``cell_command``). What this
module adds is what a remote launcher needs so that no cell outlives it or runs twice:

- each cell runs in its own process group, and dies with its launcher: ``llmexplore run``
  asks the kernel for SIGTERM when its parent dies (``honour_parent_death``) and treats
  SIGTERM like Ctrl-C, so a killed Ray worker or SLURM job leaves a checkpoint, not an
  orphan;
- a file in the run directory names the running cell process, so the next attempt on the
  same machine first waits for (and if need be kills) one that is still saving;
- stopping gives cells a grace period to checkpoint (SIGINT), then kills the group;
- threads and GPUs are split between the cells a launcher runs side by side.

It imports nothing heavy: it runs in Ray workers and submitit jobs.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from llmexplore.atomic import atomic_write_json

CELL_LOG = "cell.log"
PROCESS_FILE = ".cell-process.json"
#: set by the launcher for ``llmexplore run``: the pid it must outlive no longer than
PARENT_ENV = "LLMEXPLORE_DIE_WITH_PARENT"
#: variables every remote cell gets from the submitting environment (data paths, offline mode)
FORWARDED_PREFIXES = ("LLMEXPLORE_",)
FORWARDED_NAMES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class CellLaunch:
    """Everything a launcher on another machine needs to run one cell (picklable)."""

    cell_id: str
    run_dir: str
    args: tuple[str, ...]  # the cell command after the Python interpreter, which is the node's own
    attempt: int
    cpus: int = 1
    gpus: float = 0
    env: dict[str, str] = field(default_factory=dict)
    exit_file: str | None = None  # where the launcher writes the exit code (for backends without return values)
    backend: str = ""


def forwarded_env(extra: Iterable[str] = ()) -> dict[str, str]:
    """The variables of this environment a remote cell must see too: ``LLMEXPLORE_*``, Hugging Face's offline
    switches and the names in ``extra``."""
    names = set(FORWARDED_NAMES) | set(extra)
    return {k: v for k, v in os.environ.items() if k in names or k.startswith(FORWARDED_PREFIXES)}


def honour_parent_death() -> None:
    """In ``llmexplore run``: get SIGTERM (handled like Ctrl-C) when the launcher dies.

    Set here, after exec, rather than in the launcher between fork and exec: launchers are
    multi-threaded (Ray workers), where Python code between fork and exec may deadlock.
    """
    parent = os.environ.pop(PARENT_ENV, None)  # not for sample-factory's own worker processes
    if not parent or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):  # the launcher died before the request was in place
        os.kill(os.getpid(), signal.SIGTERM)


def stop_on_sigterm() -> None:
    """In ``llmexplore run``: SIGINT and SIGTERM (a scheduler stopping the job, the launcher's death)
    ask the run to stop at its next training step, after a checkpoint (``agents/stop_requests.py``).
    A second SIGINT stops at once; a second SIGTERM (SLURM's, after our own SIGINT) is ignored, so
    it cannot break the checkpoint being written."""
    from llmexplore.agents import stop_requests

    stop_requests.install()


def cell_process(run_dir: str | Path) -> int | None:
    """The pid of a cell process still running for this run directory on this machine, if any."""
    path = Path(run_dir) / PROCESS_FILE
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if info.get("host") != socket.gethostname():
        return None
    pid = int(info.get("pid", 0))
    return pid if pid > 0 and _runs_cell(pid, run_dir) else None


def _runs_cell(pid: int, run_dir: str | Path) -> bool:
    """Whether pid is alive (not a zombie) and is the cell of run_dir (not a recycled pid)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        state = next((line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if line.startswith("State:")), "?")
    except (OSError, IndexError):
        return False
    here = str(Path(run_dir))
    return state != "Z" and any(a == here or a.startswith(here + os.sep) for a in args)


def wait_for_cell_process(run_dir: str | Path, timeout: float) -> None:
    """Let an earlier cell process of this run directory finish saving; kill it after ``timeout``."""
    pid = cell_process(run_dir)
    if pid is None:
        return
    deadline = time.time() + timeout
    while time.time() < deadline and _runs_cell(pid, run_dir):
        time.sleep(0.2)
    if _runs_cell(pid, run_dir):
        _kill_group(pid, signal.SIGKILL)
        while _runs_cell(pid, run_dir):
            time.sleep(0.05)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _gpu_slices(launches: list[CellLaunch]) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES per cell: none for CPU cells (so `auto` does not take a GPU nobody
    allocated), a share of the job's GPUs for cells run side by side, else unchanged."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = [d for d in (visible or "").split(",") if d]
    out: list[str | None] = []
    next_device = 0
    for launch in launches:
        if launch.gpus <= 0:
            out.append("")
        elif len(launches) > 1 and devices:
            n = max(1, math.ceil(launch.gpus))
            out.append(",".join(devices[(next_device + k) % len(devices)] for k in range(n)))
            next_device += n
        else:
            out.append(None)
    return out


class CellProcesses:
    """Starts cells as process groups, waits for them, stops them with a grace period."""

    def __init__(self, launches: list[CellLaunch], stop_grace: float = 60.0, poll_seconds: float = 0.2):
        self.launches = list(launches)
        self.stop_grace = stop_grace
        self.poll_seconds = poll_seconds
        self.processes: dict[str, subprocess.Popen] = {}
        self.codes: dict[str, int] = {}
        #: set when the whole job is going away (SLURM cancel or preemption): no exit is reported,
        #: so the submitting side goes by the job's state (requeued, or ended)
        self.terminating = False
        self.requeueing = False
        self._logs: dict[str, object] = {}

    def run(self) -> dict[str, int]:
        """Run every cell to its end; return cell id -> exit code."""
        try:
            self._start_all()
            while len(self.codes) < len(self.launches):
                self._collect()
                time.sleep(self.poll_seconds)
        except KeyboardInterrupt:  # Ray's cancel, or the local executor's
            self.stop(self.stop_grace)
        except BaseException:  # submitit's requeue exit, or an error of our own
            self.stop(self.stop_grace)
            raise
        return dict(self.codes)

    def stop(self, grace: float) -> None:
        """Ask every running cell to checkpoint and exit; kill what is left after ``grace`` seconds."""
        running = {cid: p for cid, p in self.processes.items() if cid not in self.codes}
        for process in running.values():
            _kill_group(process.pid, signal.SIGINT)
        deadline = time.time() + grace
        while time.time() < deadline and any(p.poll() is None for p in running.values()):
            time.sleep(0.1)
        for process in running.values():
            if process.poll() is None:
                _kill_group(process.pid, signal.SIGKILL)
        for process in running.values():
            process.wait()
        self._collect()

    # -- internals -----------------------------------------------------------------------------
    def _start_all(self) -> None:
        for launch, gpus in zip(self.launches, _gpu_slices(self.launches)):
            wait_for_cell_process(launch.run_dir, self.stop_grace)
            self._start(launch, gpus)

    def _start(self, launch: CellLaunch, gpus: str | None) -> None:
        run_dir = Path(launch.run_dir)
        env = {**os.environ, **launch.env, PARENT_ENV: str(os.getpid())}
        for var in _THREAD_VARS:
            env[var] = str(max(1, launch.cpus))
        if gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpus
        log = open(run_dir / CELL_LOG, "ab")
        log.write(f"\n===== attempt {launch.attempt} on {socket.gethostname()} ({launch.backend}) at "
                  f"{time.strftime('%Y-%m-%d %H:%M:%S')} =====\n".encode())
        log.flush()
        process = subprocess.Popen([sys.executable, *launch.args], stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        self.processes[launch.cell_id] = process
        self._logs[launch.cell_id] = log
        atomic_write_json(run_dir / PROCESS_FILE, {"host": socket.gethostname(), "pid": process.pid,
                                                   "launcher_pid": os.getpid(), "attempt": launch.attempt,
                                                   "backend": launch.backend})

    def _collect(self) -> None:
        for launch in self.launches:
            process = self.processes.get(launch.cell_id)
            if process is None or launch.cell_id in self.codes:
                continue
            code = process.poll()
            if code is None:
                continue
            _kill_group(process.pid, signal.SIGKILL)  # sample-factory workers the cell left behind
            self.codes[launch.cell_id] = code
            self._logs.pop(launch.cell_id).close()
            try:
                (Path(launch.run_dir) / PROCESS_FILE).unlink()
            except FileNotFoundError:
                pass
            if launch.exit_file and not (self.terminating or self.requeueing):
                atomic_write_json(launch.exit_file, {"cell": launch.cell_id, "exit_code": code,
                                                     "host": socket.gethostname(), "attempt": launch.attempt})


def run_cells(launches: list[CellLaunch], stop_grace: float = 60.0) -> dict[str, int]:
    """Body of a Ray task: run these cells here; cell id -> exit code."""
    return CellProcesses(launches, stop_grace).run()


def read_exit_file(path: str | Path) -> int | None:
    """The exit code a launcher wrote for its cell; None while there is no readable file (the cell still runs,
    or its launcher was stopped or requeued before writing one)."""
    try:
        return int(json.loads(Path(path).read_text())["exit_code"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
