"""Run cells as Ray tasks, on an existing cluster (``address``) or a Ray instance started for the grid.

Each cell attempt is one task that asks Ray for the cell's CPUs, GPUs and memory and runs
the cell command on its node (``launch.run_cells``); results land in the grid's results
directory, which every node must see (a shared file system). Ray's own task retries are
off, so a cell whose worker dies fails like any other and the runner's retry rule applies
on every backend alike; the retry resumes from the cell's last checkpoint.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, ClassVar

from llmexplore.benchmarks.grids.backend_options import RayOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Cell, Grid, Resources
from llmexplore.benchmarks.grids.runners.base import CellJob, GridBackend, cell_command
from llmexplore.benchmarks.grids.runners.launch import (
    CELL_LOG,
    CellLaunch,
    forwarded_env,
    run_cells,
    wait_for_cell_process,
)
from llmexplore.benchmarks.grids.runners.lm_endpoint import refuse_loopback
from llmexplore.errors import ConfigError, require

_GIB = 2**30


def _pythonpath() -> str:
    """This checkout first, then the caller's PYTHONPATH: workers import ``runners.launch`` by name."""
    here = str(Path(__file__).resolve().parents[4])  # the checkout: runners, grids, benchmarks, llmexplore, root
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *rest])


def _note(cell: Cell, text: str) -> None:
    """Add what the driver learnt (e.g. a dead worker) to the cell's log, where a user looks first."""
    try:
        with open(cell.run_dir / CELL_LOG, "a") as fh:
            fh.write(f"[llmexplore ray] {text}\n")
    except OSError:
        pass


def _reason(ray: Any, exc: BaseException) -> str:
    if isinstance(exc, ray.exceptions.OutOfMemoryError):
        return "Ray's memory monitor killed the worker running the cell (raise suite.resources.memory_gb)"
    if isinstance(exc, ray.exceptions.NodeDiedError):
        return "the Ray node running the cell died"
    if isinstance(exc, ray.exceptions.WorkerCrashedError):
        return "the Ray worker running the cell died"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"Ray reported {type(exc).__name__}: {first[:300]}"


def task_options(cell: Cell, env: dict[str, str]) -> dict[str, Any]:
    """The ``.options(...)`` of a cell's Ray task: its resources, no Ray retries (the runner retries), the
    environment the cell needs (``cell_env``) and a name to find it by in Ray's dashboard."""
    res = cell.resources
    return dict(num_cpus=res.cpus, num_gpus=res.gpus, memory=int(res.memory_gb * _GIB), max_retries=0,
                retry_exceptions=False, runtime_env={"env_vars": env}, name=f"llmexplore {cell.id}")


def cell_env(options: RayOptions) -> dict[str, str]:
    """Environment variables every cell's task gets: the forwarded ones and this checkout on PYTHONPATH."""
    return {**forwarded_env(options.forward_env), "PYTHONPATH": _pythonpath()}


def init_arguments(options: RayOptions) -> dict[str, Any]:
    """``ray.init``'s arguments: connect to ``address``, or start a local instance for the grid."""
    common: dict[str, Any] = dict(namespace="llmexplore", log_to_driver=False, logging_level="WARNING")
    if options.address:
        return dict(address=options.address, **common)
    return dict(num_cpus=options.num_cpus, num_gpus=options.num_gpus,
                object_store_memory=options.object_store_mb * 2**20, include_dashboard=False, **common)


class RayJob(CellJob):
    def __init__(self, ray: Any, ref: Any, cell: Cell, task_grace: float):
        self._ray = ray
        self.ref = ref
        self.cell = cell
        self.task_grace = task_grace
        self._code: int | None = None

    def poll(self) -> int | None:
        """The cell's exit code once its task has ended, else None; a cancelled task gives 130 and a Ray
        failure 1, each with ``reason`` set."""
        if self._code is not None:
            return self._code
        ready, _ = self._ray.wait([self.ref], timeout=0)
        if not ready:
            return None
        try:
            self._code = int(self._ray.get(self.ref).get(self.cell.id, 1))
        except self._ray.exceptions.TaskCancelledError:
            self.reason, self._code = "the Ray task was cancelled", 130
        except self._ray.exceptions.RayError as exc:
            self.reason, self._code = _reason(self._ray, exc), 1
        if self.reason:
            _note(self.cell, self.reason)
        return self._code

    def cancel(self, grace_seconds: float) -> None:
        """Cancel the task (the cell gets to checkpoint), kill its worker if it lingers past the grace time,
        then wait for a cell process still saving on this machine."""
        if self.poll() is not None:
            return
        self._ray.cancel(self.ref)  # KeyboardInterrupt in the task: the launcher lets the cell checkpoint
        ready, _ = self._ray.wait([self.ref], timeout=max(grace_seconds, self.task_grace) + 15)
        if not ready:
            self._ray.cancel(self.ref, force=True)  # kills the worker; the cell follows it (parent-death signal)
            self._ray.wait([self.ref], timeout=30)
        wait_for_cell_process(self.cell.run_dir, grace_seconds)  # a cell still saving, when on this machine

    def describe(self) -> str:
        """The Ray task's short id, to find it in Ray's dashboard."""
        return f"ray task {self.ref.task_id().hex()[:8]}"


class RayBackend(GridBackend):
    name: ClassVar[str] = "ray"

    def __init__(self, jobs: int | None = None, **options: Any):
        self.options: RayOptions = parse_options("ray", options)  # type: ignore[assignment]
        self.jobs = jobs
        self._capacity = max(1, jobs or 1)
        self._ray: Any = None
        self._owns_connection = False
        self._task: Any = None
        self._env: dict[str, str] = {}

    @property
    def capacity(self) -> int:
        """``jobs`` when given, else how many cells the cluster's totals hold at once (set by ``check``)."""
        return self._capacity

    # -- set-up --------------------------------------------------------------------------------
    def check(self, grid: Grid) -> None:
        """Connect to Ray (or start a local instance); refuse cells no live node can hold (``check_fit``) and
        a loopback LM address on a cluster of several nodes; size ``capacity``."""
        ray = require("ray", "distributed", "the Ray grid backend")
        self._connect(ray)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if self.options.check_fit:
            for cell in _distinct_resources(grid.cells):
                _check_fit(cell, nodes)
        if len(nodes) > 1:
            refuse_loopback(grid.cells, "the nodes of a Ray cluster")
        if self.jobs is None:
            self._capacity = _cells_that_fit(ray.cluster_resources(), [c.resources for c in grid.cells])
        self._task = ray.remote(run_cells)
        self._env = cell_env(self.options)

    def _connect(self, ray: Any) -> None:
        self._ray = ray
        if ray.is_initialized():  # a caller (a notebook, a benchmark) already holds a connection
            return
        try:
            ray.init(**init_arguments(self.options))
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {self.options.address}" if self.options.address else "a local Ray instance"
            raise ConfigError(f"cannot connect to {where}: {str(exc).strip().splitlines()[0][:300]}",
                              hint="start one with `ray start --head` and pass -b address=auto (or host:port), "
                                   "or leave address unset to start a local instance") from None
        self._owns_connection = True

    # -- cells ---------------------------------------------------------------------------------
    def start(self, cell: Cell, attempt: int) -> RayJob:
        """Submit the cell as a Ray task with its resources and environment; only the runner retries it."""
        res = cell.resources
        launch = CellLaunch(cell_id=cell.id, run_dir=str(cell.run_dir), args=tuple(cell_command(cell)[1:]),
                            attempt=attempt, cpus=res.cpus, gpus=res.gpus, backend="ray")
        ref = self._task.options(**task_options(cell, self._env)).remote([launch], self.options.stop_grace_s)
        return RayJob(self._ray, ref, cell, self.options.stop_grace_s)

    def close(self) -> None:
        """Disconnect; a Ray instance started for the grid stops, and with it any task still running."""
        if self._owns_connection and self._ray is not None:
            self._ray.shutdown()
            self._owns_connection = False


def _distinct_resources(cells: list[Cell]) -> list[Cell]:
    seen: dict[tuple, Cell] = {}
    for cell in cells:
        r = cell.resources
        seen.setdefault((r.cpus, r.gpus, r.memory_gb), cell)
    return list(seen.values())


def _check_fit(cell: Cell, nodes: list[dict]) -> None:
    """A task no node can hold waits forever in Ray's queue: refuse it up front instead."""
    r = cell.resources

    def fits(node: dict) -> bool:
        have = node.get("Resources", {})
        return (have.get("CPU", 0) >= r.cpus and have.get("GPU", 0) >= r.gpus
                and have.get("memory", 0) >= r.memory_gb * _GIB)

    if any(fits(n) for n in nodes):
        return
    largest = max(nodes, key=lambda n: n.get("Resources", {}).get("CPU", 0), default={}).get("Resources", {})
    raise ConfigError(
        f"cell {cell.id} asks for {r.cpus} CPU(s), {r.gpus:g} GPU(s) and {r.memory_gb:g} GB, but no node of the Ray "
        f"cluster has that much (largest: {largest.get('CPU', 0):g} CPUs, {largest.get('GPU', 0):g} GPUs, "
        f"{largest.get('memory', 0) / _GIB:.1f} GB for tasks)",
        hint="lower suite.resources, add a larger node, or pass -b check_fit=false on an autoscaling cluster",
    )


def _cells_that_fit(total: dict[str, float], resources: list[Resources]) -> int:
    """How many cells the cluster holds at once (by its totals), at least one."""
    worst = max(resources, key=lambda r: (r.gpus, r.cpus, r.memory_gb))
    limits = [total.get("CPU", 0) // worst.cpus]
    if worst.gpus > 0:
        limits.append(total.get("GPU", 0) // worst.gpus)
    limits.append(total.get("memory", 0) // (worst.memory_gb * _GIB))
    return max(1, int(min(limits)) if all(math.isfinite(x) for x in limits) else 1)
