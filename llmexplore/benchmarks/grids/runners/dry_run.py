"""``grid --dry-run`` for the Ray and SLURM backends: exactly what a run would submit, submitting nothing.

Ray: ``ray.init``'s arguments and each cell's task options, from the functions the backend calls. SLURM:
each job's sbatch script as submitit writes it (``slurm.planned_jobs``) and, since that script's ``srun``
line only starts submitit's loader, the ``llmexplore run`` command of each cell the job runs
(``base.cell_command``, run by the nodes' interpreter). Environment variables are listed by name only:
forwarded ones may hold keys.
"""

from __future__ import annotations

import shlex
from typing import Any

from llmexplore.benchmarks.grids.backend_options import RayOptions, SlurmOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Cell, Grid
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


def slurm_plan(grid: Grid, options: dict[str, Any]) -> str:
    """Each job a fresh run submits: its cells and their ``llmexplore run`` commands, then its sbatch script
    (jobs with the same script share one; the script comes last, as submitit writes it, byte for byte)."""
    from llmexplore.benchmarks.grids.runners.slurm import node_python, planned_jobs

    parsed: SlurmOptions = parse_options("slurm", options)  # type: ignore[assignment]
    python = node_python(parsed)
    if parsed.executor != "slurm":
        lines = [f"# executor local: each job runs as a process of this machine (time limit "
                 f"{parsed.time_minutes or grid.suite.resources.time_minutes} minutes), its cells side by side"]
        return "\n".join(lines + [_cell_line(grid.cell(cid), python) for cells, _ in planned_jobs(grid, parsed)
                                   for cid in cells])
    scripts: dict[str, list[list[str]]] = {}
    for cells, script in planned_jobs(grid, parsed):
        scripts.setdefault(script, []).append(cells)
    parts = []
    for script, jobs in scripts.items():
        lines = [f"# sbatch script of {len(jobs)} job(s), one per pack of cells: "
                 + " | ".join(", ".join(cells) for cells in jobs),
                 "# its srun line starts submitit's loader, which runs each cell of the job side by side:"]
        lines += [_cell_line(grid.cell(cid), python) for cells in jobs for cid in cells]
        parts.append("\n".join(lines) + "\n" + script + ("" if script.endswith("\n") else "\n"))
    return "\n".join(parts)


def _cell_line(cell: Cell, python: str) -> str:
    """``#   <cell id>: <the cell's llmexplore run command with the nodes' interpreter>``."""
    return f"#   {cell.id}: {python} {shlex.join(cell_command(cell)[1:])}"
