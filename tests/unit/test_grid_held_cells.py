"""A cell whose folder another process holds is "someone else is doing this", not a failure (issue 49): the
grid reports it as held (grid.json and the console), waits, and counts it done elsewhere once the holder has
completed it; a holder that stops early leaves the cell to this grid. The holder is a real process holding the
real run-folder lock, and the refused cell a real `llmexplore run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners.base import SUMMARY_FILE, CellJob, GridBackend, GridRunner, GridView
from llmexplore.benchmarks.grids.runners.local import LocalBackend
from llmexplore.benchmarks.run.record import RunRecord

REPO = Path(__file__).resolve().parents[2]
ONE_CELL = """
    name: one
    defaults: {train: {envs_per_worker: 8, batch_size: 512}}
    set: {method: none, task: crafter:reward-free, steps: 2048, seed: 0}
"""
HOLD = """
import sys, time
from llmexplore.benchmarks.run.lock import RunFolderLock
lock = RunFolderLock(sys.argv[1]); lock.acquire(); print("held", flush=True); sys.stdin.readline()
"""


def _grid(tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent(ONE_CELL).lstrip())
    return load_grid(path, tmp_path / "out")


class Holder:
    """Another process holding a cell's folder until ``release``."""

    def __init__(self, run_dir: Path):
        run_dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.proc.communicate("done\n", timeout=30)


def _complete(cell) -> None:
    """What the holder leaves when it has trained the cell: a complete record."""
    run = cell.run
    RunRecord(status="complete", cell=f"{run.label}/{run.task}/seed{run.seed}", spec=run.spec_dict(), environment={},
              started_at="t0", updated_at="t1", budget=run.steps, env_steps=run.steps, wall_seconds=1.0,
              steps_per_second=1.0, metric="score").write(cell.run_dir)


def _when_held(summary_file: Path, then) -> threading.Thread:
    """Run ``then`` once grid.json shows the cell held (the grid is waiting for the holder)."""
    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if json.loads(summary_file.read_text())["cells"][0]["status"] == "held":
                    break
            except (OSError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.05)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


class TakenJustBefore(LocalBackend):
    """A real `llmexplore run` for the cell, but another process takes its folder just before it starts: the
    race of two grids started together, both of which found the folder free."""

    def __init__(self):
        super().__init__(jobs=1)
        self.holder: Holder | None = None

    def start(self, cell, attempt: int):
        if self.holder is None:
            self.holder = Holder(cell.run_dir)
        return super().start(cell, attempt)


def test_a_cell_refused_by_the_lock_is_held_then_done_elsewhere_and_not_a_failure(tmp_path: Path):
    grid = _grid(tmp_path)
    cell = grid.cells[0]
    backend = TakenJustBefore()
    lines: list[str] = []

    class Lines:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    view = GridView("one", enabled=True, stream=Lines())

    def holder_finishes() -> None:
        _complete(cell)
        backend.holder.release()

    watcher = _when_held(grid.out_dir / SUMMARY_FILE, holder_finishes)
    summary = GridRunner(grid, backend, retries=0, view=view, poll_seconds=0.05).run()
    watcher.join(10)
    (row,) = summary["cells"]
    assert row["status"] == "elsewhere", row  # the old code: "failed", and the grid exits 1
    assert str(backend.holder.proc.pid) in row["held_by"]
    assert row["attempts"] == 0 and row["history"][0]["status"] == "held" and row["error"] is None
    assert summary["counts"] == {"elsewhere": 1}
    assert any("in use by process" in line and "waiting for it" in line for line in lines)
    assert any("1 held by another process" in line for line in lines)
    assert "in use by process" in (cell.run_dir / "cell.log").read_text()  # the real refusal


class _Trains(GridBackend):
    """Completes each cell it starts (the grid took the cell back from a holder that stopped)."""

    name = "trains"
    started: list[str] = []

    @property
    def capacity(self) -> int:
        return 1

    def start(self, cell, attempt: int) -> CellJob:
        self.started.append(cell.id)
        _complete(cell)
        return _Done()


class _Done(CellJob):
    def poll(self) -> int | None:
        return 0

    def cancel(self, grace_seconds: float) -> None:
        pass


def test_a_holder_that_stops_before_the_end_leaves_the_cell_to_the_grid(tmp_path: Path):
    grid = _grid(tmp_path)
    holder = Holder(grid.cells[0].run_dir)
    watcher = _when_held(grid.out_dir / SUMMARY_FILE, holder.release)  # it stops without a complete record
    backend = _Trains()
    summary = GridRunner(grid, backend, retries=0, poll_seconds=0.05).run()
    watcher.join(10)
    (row,) = summary["cells"]
    assert backend.started == [grid.cells[0].id]  # not started while held, started once free
    assert row["status"] == "complete" and row["attempts"] == 1
    assert [h.get("status") for h in row["history"]] == ["pending", "complete"]
    assert row["held_by"] is None and f"process {holder.proc.pid}" in row["history"][0]["held_by"]
