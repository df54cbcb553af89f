"""Cells whose budget would outrun their backend's time limit, found before anything is submitted.

The budget rule (``run/budget.py``) lets a cell without ``steps`` train the task's published budget
when that takes under a day on two cores: MiniHack's 50 million env steps pass it at about 16 hours.
A SLURM job stops at its time limit (``suite.resources.time_minutes``, or ``-b time_minutes``), then
checkpoints and requeues itself at most ``max_requeues`` times; a cell needing more than that ends
unfinished hours later. So the grid estimates each cell's wall time from its family's measured speed on
the kind of machine the cell asks for (``budget.training_rate``) and says so first. Local and Ray runs
have no time limit.
"""

from __future__ import annotations

import math
from typing import Any

from llmexplore.benchmarks.grids.backend_options import SlurmOptions, parse_options
from llmexplore.benchmarks.grids.grid_file import Cell, Grid
from llmexplore.benchmarks.run.budget import training_rate
from llmexplore.envs import get_task


def time_limit_warnings(grid: Grid, backend: str, options: dict[str, Any]) -> list[str]:
    """A line for the cells whose estimated wall time exceeds their job's time limit (SLURM only; else none),
    one per budget, speed and limit: a ``warning`` where even the job's requeues cannot reach the budget, a
    ``note`` where they can."""
    if backend != "slurm":
        return []
    parsed: SlurmOptions = parse_options("slurm", options)  # type: ignore[assignment]
    cells_by_line: dict[tuple[str, str], list[str]] = {}
    for cell in grid.cells:
        found = _cell_line(cell, parsed)
        if found:
            cells_by_line.setdefault(found, []).append(cell.id)
    lines = []
    for (kind, text), ids in cells_by_line.items():
        named = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        lines.append(f"{kind}: {'cell' if len(ids) == 1 else f'{len(ids)} cells'} {named}: {text}")
    return lines


def estimated_seconds(cell: Cell) -> tuple[float, str]:
    """A cell's wall time for its resolved budget, and where the speed behind it comes from."""
    assert cell.run is not None, "cells come resolved from load_grid"
    train = cell.run.train
    rate = training_rate(get_task(cell.run.task), train.network, train.device, train.num_workers)
    return cell.run.steps / rate.steps_per_second, f"~{rate.steps_per_second:,.0f} env steps/s, {rate.source}"


def _cell_line(cell: Cell, options: SlurmOptions) -> tuple[str, str] | None:
    """("warning" or "note", what to say) for a cell past its time limit, without the cell's name."""
    limit_minutes = options.time_minutes or cell.resources.time_minutes
    seconds, source = estimated_seconds(cell)
    if seconds <= limit_minutes * 60:
        return None
    jobs_needed = math.ceil(seconds / (limit_minutes * 60))
    reach = limit_minutes * (1 + options.max_requeues)
    what = (f"{cell.run.steps:,} env steps take about {_duration(seconds)} ({source}), past the "
            f"SLURM time limit of {limit_minutes} minutes")
    if jobs_needed - 1 <= options.max_requeues:
        return "note", (f"{what}; the job requeues itself {jobs_needed - 1} time(s) at the limit (up to "
                        f"max_requeues={options.max_requeues}), waiting in the queue each time")
    return "warning", (f"{what}; with max_requeues={options.max_requeues} a job stops unfinished after about "
                       f"{_duration(reach * 60)}. Set `steps` (about {_steps_within(cell, seconds, limit_minutes)} "
                       f"fit in one time limit), raise suite.resources.time_minutes or -b time_minutes, or "
                       f"-b max_requeues={jobs_needed - 1}")


def _steps_within(cell: Cell, seconds: float, limit_minutes: int) -> str:
    """How many env steps fit in one time limit at the estimated speed, rounded down to a readable figure."""
    fitting = cell.run.steps * limit_minutes * 60 / seconds
    digits = 10 ** max(0, int(math.log10(fitting)) - 1)
    return f"{int(fitting // digits * digits):,}"


def _duration(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:,.1f} hours" if hours >= 1 else f"{seconds / 60:,.0f} minutes"
