"""Scheduling overhead and parallel speedup of the grid backends (local, ray, slurm).

    PYTHONPATH=. python tests/perf/bench_backends.py [--repeats 3] [--backends local,ray,slurm]

1. Overhead per cell: time from the runner handing a cell to its backend to the cell's first
   training step (its run record shows env steps; `llmexplore run` writes one at once then).
   It includes starting Python and building the environment and networks, which every
   backend pays alike; the backend's own share is the part until the kernel started the
   cell's `llmexplore run` process, printed beside it.
   (A local cell alone gets all cores' threads; Ray and SLURM cells get `resources.cpus`.)
2. Speedup of a 4-cell grid (one rollout worker per cell) from 1 to 2 cells at a time.
   Target on a 2-core machine: >= 1.7x.

Ray runs on a local instance started once here (its start-up is printed apart); SLURM runs
through submitit's local executor, i.e. the same job submission on this machine. Timings
on a shared machine are noisy: compare numbers from one run, not across runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("LLMEXPLORE_DATA", str(REPO.parent / "shared" / "data"))
os.environ.setdefault("LLMEXPLORE_SF_QUIET", "1")

from llmexplore.benchmarks.cli import make_backend  # noqa: E402
from llmexplore.benchmarks.grids.grid_file import Cell, load_grid  # noqa: E402
from llmexplore.benchmarks.run.record import RECORD_FILE  # noqa: E402
from llmexplore.benchmarks.grids.runners.base import GridBackend, GridRunner  # noqa: E402

GRID = """
    name: bench
    suite: {{resources: {{cpus: 1, memory_gb: 1, time_minutes: 60}}}}
    defaults: {{steps: {steps}, task: nethack:score, train: {{envs_per_worker: 8, batch_size: 512, num_workers: 1}}}}
    vary: {{method: [none], seed: {seeds}}}
"""


class Timed(GridBackend):
    """Wraps a backend: notes when each cell is handed over and when its record first shows steps."""

    def __init__(self, inner: GridBackend):
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.submitted: dict[str, float] = {}
        self.process_start: dict[str, float] = {}
        self.first_step: dict[str, float] = {}
        self._cells: dict[str, Cell] = {}
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    def check(self, grid) -> None:
        self.inner.check(grid)

    def start(self, cell: Cell, attempt: int):
        self.submitted[cell.id] = time.time()
        self._cells[cell.id] = cell
        return self.inner.start(cell, attempt)

    def close(self) -> None:
        self._stop.set()
        self.inner.close()

    def _watch(self) -> None:
        import json

        import psutil

        while not self._stop.is_set():
            for cell_id, cell in list(self._cells.items()):
                if cell_id not in self.process_start:  # the kernel's start time of `llmexplore run`
                    spec = str(cell.run_dir)  # the cell command: run --out <run_dir>
                    for p in psutil.process_iter(["cmdline", "create_time"]):
                        if spec in (p.info["cmdline"] or []):
                            self.process_start[cell_id] = p.info["create_time"]
                            break
                if cell_id in self.first_step:
                    continue
                path = cell.run_dir / RECORD_FILE
                try:
                    stat = path.stat()
                    if json.loads(path.read_text()).get("env_steps", 0) > 0:
                        self.first_step[cell_id] = stat.st_mtime  # when the record was written
                except (OSError, ValueError):
                    pass
            time.sleep(0.02)


def create_time_offset() -> float:
    """psutil's process start times are boot time plus clock ticks: their offset from time.time()."""
    import subprocess

    import psutil

    offsets = []
    for _ in range(5):
        before = time.time()
        proc = subprocess.Popen(["sleep", "0.1"])
        offsets.append(psutil.Process(proc.pid).create_time() - before)
        proc.wait()
    return statistics.median(offsets)


def grid_for(tmp: Path, cells: int, steps: int):
    path = tmp / "grid.yaml"
    path.write_text(textwrap.dedent(GRID.format(steps=steps, seeds=list(range(cells)))).lstrip())
    return load_grid(path, tmp / "out")


def backend(name: str, jobs: int) -> GridBackend:
    options: dict[str, Any] = {"executor": "local"} if name == "slurm" else {}
    return make_backend(name, jobs, options)


def run_grid(name: str, cells: int, steps: int, jobs: int) -> tuple[float, Timed]:
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
        grid = grid_for(Path(tmp), cells, steps)
        timed = Timed(backend(name, jobs))
        started = time.time()
        summary = GridRunner(grid, timed, retries=0, poll_seconds=0.1).run()
        seconds = time.time() - started
        bad = [c["id"] for c in summary["cells"] if c["status"] != "complete"]
        if bad:
            raise SystemExit(f"{name}: cells did not complete: {bad} (see {tmp})")
        return seconds, timed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="local,ray,slurm")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--overhead-cells", type=int, default=5, help="one-cell grids per backend for the overhead")
    parser.add_argument("--overhead-steps", type=int, default=1024)
    parser.add_argument("--speedup-steps", type=int, default=8192, help="env steps of each of the 4 cells")
    parser.add_argument("--skip-speedup", action="store_true")
    args = parser.parse_args()
    names = args.backends.split(",")

    if "ray" in names:
        import ray

        t = time.time()
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="WARNING",
                 object_store_memory=256 * 2**20)
        print(f"# Ray local instance start-up: {time.time() - t:.1f} s (once per grid, not per cell)")

    print(f"\n# submit -> first training step: {args.overhead_cells} one-cell grids per backend, interleaved, "
          f"{args.overhead_steps} steps each (median [all])")
    offset = create_time_offset()
    delays: dict[str, list[float]] = {name: [] for name in names}
    starts: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.overhead_cells):
        for name in names:  # round-robin, so load from others hits every backend alike
            _, timed = run_grid(name, 1, args.overhead_steps, jobs=1)
            for c, t in timed.submitted.items():
                if c in timed.first_step:
                    delays[name].append(timed.first_step[c] - t)
                if c in timed.process_start:
                    starts[name].append(timed.process_start[c] - offset - t)
    for name in names:
        print(f"{name:6s} submit -> first step {statistics.median(delays[name]):6.2f} s {[round(d, 2) for d in delays[name]]}"
              f"   of which submit -> cell process started {statistics.median(starts[name]):5.2f} s "
              f"{[round(d, 2) for d in starts[name]]}")

    if args.skip_speedup:
        return
    print(f"\n# 4 cells of {args.speedup_steps} env steps (1 rollout worker each): grid wall time, "
          f"median of {args.repeats}")
    for name in names:
        one, two = [], []
        for _ in range(args.repeats):  # interleaved, so machine noise hits both alike
            one.append(run_grid(name, 4, args.speedup_steps, jobs=1)[0])
            two.append(run_grid(name, 4, args.speedup_steps, jobs=2)[0])
        m1, m2 = statistics.median(one), statistics.median(two)
        print(f"{name:6s} 1 at a time {m1:6.1f} s   2 at a time {m2:6.1f} s   speedup {m1 / m2:.2f}x (target >= 1.7)"
              f"   runs {[round(x) for x in one]} / {[round(x) for x in two]}")

    if "ray" in names:
        import ray

        ray.shutdown()


if __name__ == "__main__":
    main()
