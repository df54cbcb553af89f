"""``grid --dry-run`` for the cluster backends: exactly what a run would submit, submitting nothing.

SLURM: the backend's own packing and parameters (``SlurmBackend.start`` and ``flush``) run against an
executor that records instead of calling sbatch, and each job's batch script is rendered by submitit's
renderer (``slurm.sbatch_script``). Ray: ``ray.init``'s arguments and each cell's task options, from the
functions the backend calls. Environment variables are listed by name only: forwarded ones may hold keys.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmexplore.benchmarks.grids.backend_options import RayOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Grid, safe_name
from llmexplore.benchmarks.grids.runners.base import cell_command


@dataclass
class _Submission:
    params: dict[str, Any]
    #: the cells of each job (several jobs: one job array)
    jobs: list[list[str]] = field(default_factory=list)


class _RecordingExecutor:
    """Stands in for submitit's executor: keeps the parameters and what would be submitted."""

    def __init__(self, log: list[_Submission]):
        self.log = log
        self.params: dict[str, Any] = {}

    def update_parameters(self, **params: Any) -> None:
        self.params.update(params)

    def submit(self, batch: Any) -> object:
        return self.submit_array([batch])[0]

    def submit_array(self, batches: list[Any]) -> list[object]:
        self.log.append(_Submission(dict(self.params), [[launch.cell_id for launch in b.launches] for b in batches]))
        return [object() for _ in batches]


def slurm_plan(grid: Grid, options: dict[str, Any], jobs: int | None = None) -> str:
    """Every job the SLURM backend would submit for the grid's cells (first attempts), as text."""
    from llmexplore.benchmarks.grids.runners.slurm import SlurmBackend, sbatch_script

    log: list[_Submission] = []

    class Planning(SlurmBackend):
        def _executor(self) -> Any:
            return _RecordingExecutor(log)

    backend = Planning(jobs=jobs, **options)
    # what check() sets, without its checks for sbatch on this machine and without creating folders
    backend._folder = (Path(backend.options.folder).expanduser().resolve() if backend.options.folder
                       else grid.out_dir / "slurm")
    backend._grid_name = safe_name(grid.name)
    for cell in grid.cells:
        backend.start(cell, attempt=1)
    backend.flush()
    python = backend.options.python or shlex.quote(sys.executable)
    by_id = {c.id: c for c in grid.cells}
    lines = [f"# {backend.kind}: {sum(len(s.jobs) for s in log)} job(s) for {len(grid.cells)} cell(s); "
             f"job scripts and logs under {backend._folder}"]
    for number, sub in enumerate(log, start=1):
        cells = [c for job in sub.jobs for c in job]
        what = f"a job array of {len(sub.jobs)} jobs" if len(sub.jobs) > 1 else "one job"
        lines += ["", f"# --- submission {number}: {what}, {len(sub.jobs[0])} cell(s) side by side in each: "
                  + ", ".join(cells)]
        if backend.options.executor == "slurm":
            params = dict(sub.params)
            if len(sub.jobs) > 1:
                params["map_count"] = len(sub.jobs)  # how submitit asks for an array (--array=0-N)
            lines.append(sbatch_script(params, backend._folder / "%j", python=python).rstrip())
        else:
            lines.append(f"# submitit LocalExecutor parameters: {sub.params}")
        lines.append("# each cell runs, on the job's node:")
        lines += [f"#   {shlex.join(cell_command(by_id[c]))}" for c in cells]
    return "\n".join(lines)


def ray_plan(grid: Grid, options: dict[str, Any]) -> str:
    """``ray.init``'s arguments and each cell's Ray task options, as text."""
    from llmexplore.benchmarks.grids.runners.ray_backend import cell_env, init_arguments, task_options

    parsed: RayOptions = parse_options("ray", options)  # type: ignore[assignment]
    env = cell_env(parsed)
    shown_env = {name: "<value of this shell's variable>" if name != "PYTHONPATH" else value
                 for name, value in env.items()}
    where = f"connect to {parsed.address}" if parsed.address else "start a local Ray instance for this grid"
    lines = [f"# Ray: {where}; ray.init({_kwargs(init_arguments(parsed))})",
             "# one task per cell (Ray's own retries off: the grid's --retries resumes a failed cell); "
             "task environment: " + ", ".join(sorted(env))]
    for cell in grid.cells:
        task = task_options(cell, shown_env)
        lines += ["", f"# cell {cell.id}", f"run_cells.options({_kwargs(task)})",
                  f"#   runs: {shlex.join(cell_command(cell))}"]
    return "\n".join(lines)


def _kwargs(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def submission_plan(backend: str, grid: Grid, options: dict[str, Any], jobs: int | None = None) -> str | None:
    """What ``backend`` would submit, or None for the local backend (it submits nothing)."""
    if backend == "slurm":
        return slurm_plan(grid, options, jobs)
    if backend == "ray":
        return ray_plan(grid, options)
    return None
