"""``grid --dry-run`` for the Ray backend: exactly what a run would submit, submitting nothing.

``ray.init``'s arguments and each cell's task options, from the functions the backend calls. Environment
variables are listed by name only: forwarded ones may hold keys. (SLURM's dry run prints each job's
sbatch script from ``slurm.planned_jobs``.)
"""

from __future__ import annotations

import shlex
from typing import Any

from llmexplore.benchmarks.grids.backend_options import RayOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Grid
from llmexplore.benchmarks.grids.runners.base import cell_command


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
