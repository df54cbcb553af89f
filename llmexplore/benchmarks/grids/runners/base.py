"""What every grid backend provides, and the one orchestrator they all share.

A backend only knows how to start a cell somewhere (a local process, a Ray task, a SLURM
job), poll it, and cancel it. Everything else — skipping complete cells, ordering
parents before children, bounded retries, the progress view, the grid summary, clean
cancellation — lives in ``GridRunner`` so that all backends behave the same. Before a cell
starts, the runner writes the run the grid resolved to the cell's folder (``resolved.json``,
beside ``spec.yaml`` for people); the cell always runs as ``llmexplore run --out <run_dir>``,
which trains that resolved run as it is and is itself resumable, so a retried or requeued
cell continues from its last checkpoint.

Before the first cell starts, the runner asks the backend whether it can run the cells
that are left (``check``) and checks the LM server the grid names (``lm_endpoint``).

A cell whose folder another process holds (a second grid on the same output folder, a rerun by
hand) is ``held``: someone else is training it, which is no failure. The runner waits for the
holder; the cell is then ``elsewhere`` (complete, trained by that process) or, if the holder left
it unfinished, the runner trains it itself from the holder's last checkpoint. Neither counts
against the grid's exit code: only ``failed`` and ``blocked`` cells do.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import yaml

from llmexplore.atomic import atomic_write_json, atomic_write_text, log_tail
from llmexplore.benchmarks.grids.grid_file import Cell, Grid
from llmexplore.benchmarks.run.folder import adopt_folder, is_complete
from llmexplore.benchmarks.run.lock import REFUSAL_TEXT, folder_holder
from llmexplore.lock_holders import describe_holder
from llmexplore.benchmarks.run.record import read_record
from llmexplore.benchmarks.run.spec import with_parent_checkpoint
from llmexplore.benchmarks.grids.runners.launch import CELL_LOG
from llmexplore.benchmarks.grids.runners.lm_endpoint import check_endpoints
from llmexplore.errors import UserError

SPEC_FILE = "spec.yaml"
SUMMARY_FILE = "grid.json"


def cell_command(cell: Cell) -> list[str]:
    """The command a backend runs for a cell (on any machine that sees the run directory): ``run --out``
    alone trains the resolved run the folder holds (``prepare_cell_folder`` wrote it), as it is."""
    return [sys.executable, "-m", "llmexplore", "run", "--out", str(cell.run_dir), "--quiet"]


def prepare_cell_folder(cell: Cell) -> None:
    """Write the cell's resolved run (``resolved.json``, what the cell trains) and its spec (``spec.yaml``,
    for people: the cell as the grid file sets it). A folder holding another run is refused here, with
    the rules of a resumption (``run/folder.py``); a fine-tuning cell gets its parent checkpoint now, as
    its parent has finished."""
    if cell.run is None:
        raise ValueError(f"cell {cell.id} was not resolved: cells come from load_grid")
    cell.run_dir.mkdir(parents=True, exist_ok=True)
    # only what the grid file set: `llmexplore run --config spec.yaml` by hand then resolves to the same run
    # (a train.preset fills the fields left unset; every default written out would make it a no-op)
    atomic_write_text(cell.run_dir / SPEC_FILE,
                      yaml.safe_dump(cell.spec.model_dump(mode="json", exclude_unset=True), sort_keys=False))
    adopt_folder(cell.run_dir, with_parent_checkpoint(cell.run))


class CellJob(ABC):
    """A running cell."""

    #: set by ``poll`` when the backend knows why a cell ended early (a worker died, a job was
    #: cancelled): the runner puts it before the cell's own error
    reason: str | None = None

    def describe(self) -> str:
        """Where the cell runs or waits (a node, a job id and its queue state), for the live view."""
        return ""

    @abstractmethod
    def poll(self) -> int | None:
        """The exit code once the cell has finished, else None."""

    @abstractmethod
    def cancel(self, grace_seconds: float) -> None:
        """Ask the cell to stop (it checkpoints), and make sure it is gone after the grace time."""


class GridBackend(ABC):
    name: ClassVar[str]

    @property
    @abstractmethod
    def capacity(self) -> int:
        """How many cells may run at once."""

    @abstractmethod
    def start(self, cell: Cell, attempt: int) -> CellJob:
        """Start a cell whose spec file is written."""

    def check(self, grid: Grid) -> None:
        """Raise a UserError before anything starts if this backend cannot run the grid's cells
        (the runner passes only the cells left to run)."""

    def close(self) -> None:
        """Release what the backend holds (clusters, executors)."""


@dataclass
class CellState:
    cell: Cell
    #: pending | skipped | running | complete | failed | blocked | interrupted, and held (another process
    #: holds the cell's folder: the runner waits) | elsewhere (complete, trained by that process)
    status: str = "pending"
    attempts: int = 0
    job: CellJob | None = None
    started: float = 0.0
    seconds: float = 0.0
    error: str | None = None
    log_tail: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    #: who holds the cell's folder while it is held (and who completed it, when elsewhere), in words
    held_by: str | None = None


class GridRunner:
    """Runs a grid's cells on a backend: skip complete, respect parents, retry, report."""

    def __init__(self, grid: Grid, backend: GridBackend, retries: int = 1, view: "GridView | None" = None,
                 poll_seconds: float = 0.5, cancel_grace_seconds: float = 60.0):
        self.grid = grid
        self.backend = backend
        self.retries = retries
        self.poll_seconds = poll_seconds
        self.cancel_grace = cancel_grace_seconds
        self.states = {c.id: CellState(c) for c in grid.cells}
        self.view = view or GridView(grid.name, enabled=False)
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run every cell not yet complete through the backend until each has ended; returns the summary
        it also writes (on Ctrl-C too, marked interrupted)."""
        for state in self.states.values():
            if _is_complete(state.cell):
                state.status = "skipped"
        pending = [s.cell for s in self.states.values() if s.status == "pending"]
        checked = False
        try:
            if pending:
                check_endpoints(pending)
                self.backend.check(dataclasses.replace(self.grid, cells=pending))
            checked = True
            self._write_summary()
            while not self._finished():
                self._check_held_cells()
                self._start_ready_cells()
                self._collect_finished()
                self.view.update(self.states.values())
                time.sleep(self.poll_seconds)
            self.view.update(self.states.values())
        except BaseException:  # Ctrl-C (or SIGTERM, which the CLI turns into one), or a failing backend
            self._cancel_running()
            if checked:  # a failed check leaves an earlier summary as it was
                self._write_summary(interrupted=True)
            raise
        finally:
            self.view.close()
            self.backend.close()
        return self._write_summary()

    def _finished(self) -> bool:
        return all(s.status in ("skipped", "complete", "elsewhere", "failed", "blocked")
                   for s in self.states.values())

    def _running(self) -> list[CellState]:
        return [s for s in self.states.values() if s.status == "running"]

    def _start_ready_cells(self) -> None:
        started = False
        for state in self.states.values():
            if len(self._running()) >= self.backend.capacity:
                break
            if state.status != "pending":
                continue
            parent = self.states.get(state.cell.parent_id) if state.cell.parent_id else None
            if parent is not None:
                if parent.status in ("failed", "blocked"):
                    state.status, state.error = "blocked", f"parent cell {parent.cell.id} failed"
                    continue
                if parent.status not in ("complete", "skipped", "elsewhere"):
                    continue
            holder = folder_holder(state.cell.run_dir)
            if holder is not None:  # another process trains it: wait, do not prepare or start it
                self._hold(state, holder)
                started = True  # the summary shows it
                continue
            try:
                prepare_cell_folder(state.cell)
            except UserError as exc:  # the folder holds another run; the parent left no checkpoint
                state.status, state.error = "failed", str(exc)
                continue
            state.attempts += 1
            state.started = time.time()
            state.job = self.backend.start(state.cell, state.attempts)
            state.status = "running"
            started = True
        if started:
            self._write_summary()

    def _collect_finished(self) -> None:
        for state in self._running():
            code = state.job.poll()
            if code is None:
                continue
            reason = state.job.reason
            state.seconds += time.time() - state.started
            state.job = None
            holder = folder_holder(state.cell.run_dir) if code != 0 and _refused_by_lock(state.cell) else None
            if _is_complete(state.cell):
                state.status = "complete"
                state.history.append({"attempt": state.attempts, "exit_code": code, "status": "complete"})
            elif holder is not None:  # refused: another process took the folder first; not an attempt
                state.history.append({"attempt": state.attempts, "exit_code": code, "status": "held"})
                state.attempts -= 1
                self._hold(state, holder)
            else:
                state.error, state.log_tail = _failure_details(state.cell, code)
                if reason:
                    state.error = f"{reason}; {state.error}"
                state.history.append({"attempt": state.attempts, "exit_code": code, "error": state.error})
                state.status = "pending" if state.attempts <= self.retries else "failed"
            self._write_summary()

    def _hold(self, state: CellState, holder: dict) -> None:
        """Mark a cell as held by another process (said once on the console)."""
        state.status, state.held_by, state.error = "held", describe_holder(holder), None
        self.view.note(f"cell {state.cell.id}: its folder is in use by {state.held_by}; waiting for it")

    def _check_held_cells(self) -> None:
        """Held cells whose holder has let go: ``elsewhere`` when it completed them, else pending again (the
        runner trains them itself, from the holder's last checkpoint)."""
        changed = False
        for state in self.states.values():
            if state.status != "held" or folder_holder(state.cell.run_dir) is not None:
                continue
            complete = _is_complete(state.cell)
            state.status = "elsewhere" if complete else "pending"
            state.history.append({"status": state.status, "held_by": state.held_by})
            self.view.note(f"cell {state.cell.id}: {state.held_by} "
                           + ("completed it" if complete else "stopped before the end; this grid continues it"))
            if not complete:
                state.held_by = None  # this grid's own from now on (the history keeps who held it)
            changed = True
        if changed:
            self._write_summary()

    def _cancel_running(self) -> None:
        running = self._running()
        try:
            for state in running:
                state.job.cancel(self.cancel_grace)
        finally:
            for state in running:
                state.status = "interrupted"
                state.job = None

    # -- summary -------------------------------------------------------------------------------
    def _write_summary(self, interrupted: bool = False) -> dict[str, Any]:
        cells = []
        for state in self.states.values():
            cells.append({
                "id": state.cell.id,
                "run_dir": str(state.cell.run_dir),
                "status": state.status,
                "attempts": state.attempts,
                "seconds": round(state.seconds, 1),
                "parent": state.cell.parent_id,
                "error": state.error,
                "held_by": state.held_by,
                "log_tail": state.log_tail,
                "history": state.history,
            })
        counts: dict[str, int] = {}
        for c in cells:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        summary = {
            "schema": "llmexplore.grid",
            "schema_version": 1,
            "name": self.grid.name,
            "grid_file": str(self.grid.path),
            "backend": self.backend.name,
            "started_at": self.started_at,
            "interrupted": interrupted,
            "counts": counts,
            "cells": cells,
        }
        atomic_write_json(self.grid.out_dir / SUMMARY_FILE, summary)
        return summary


def _is_complete(cell: Cell) -> bool:
    """The cell's folder holds a record complete at the cell's budget (a budget that grew is not)."""
    try:
        return is_complete(read_record(cell.run_dir), cell.run.budget if cell.run else 0)
    except UserError:
        return False


def _refused_by_lock(cell: Cell) -> bool:
    """Whether the attempt that just ended was refused the cell's folder (its log's last lines say so). A
    crashed attempt whose own workers still hold the lock for a moment was not refused: it failed."""
    return REFUSAL_TEXT in log_tail(cell.run_dir / CELL_LOG, lines=5)


def _failure_details(cell: Cell, exit_code: int) -> tuple[str, str]:
    """Why a cell did not complete: its record's error, else the tail of its log."""
    tail = log_tail(cell.run_dir / CELL_LOG, lines=30)
    try:
        record = read_record(cell.run_dir)
        if record.error:
            return record.error.get("message", f"exit code {exit_code}"), record.error.get("log_tail") or tail
        return f"run ended with status '{record.status}' (exit code {exit_code})", tail
    except UserError:
        return f"exit code {exit_code} before a run record was written", tail


class GridView:
    """Cells done/running/failed and an ETA: a live table on a terminal, lines otherwise."""

    def __init__(self, title: str, enabled: bool = True, stream=None):
        self.title = title
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._live = None
        self._last_line = ""
        self._t0 = time.time()
        if enabled and self.stream.isatty():
            from rich.live import Live

            self._live = Live(refresh_per_second=2, transient=False)
            self._live.start()

    def update(self, states) -> None:
        """Redraw the counts of cells per status."""
        if not self.enabled:
            return
        states = list(states)
        counts: dict[str, int] = {}
        for s in states:
            counts[s.status] = counts.get(s.status, 0) + 1
        done = counts.get("complete", 0) + counts.get("skipped", 0) + counts.get("elsewhere", 0)
        finished_times = [s.seconds for s in states if s.status == "complete" and s.seconds > 0]
        running = [s for s in states if s.status == "running"]
        remaining = counts.get("pending", 0) + len(running)
        eta = ""
        if finished_times and remaining:
            per_cell = sum(finished_times) / len(finished_times)
            eta = f", ETA {_fmt_seconds(per_cell * remaining / max(len(running), 1))}"
        held = f", {counts['held']} held by another process" if counts.get("held") else ""
        line = (f"[{self.title}] {done}/{len(states)} done, {len(running)} running, "
                f"{counts.get('failed', 0)} failed, {counts.get('pending', 0)} queued{held}{eta}")
        if self._live is not None:
            from rich.table import Table

            table = Table(title=line, show_header=True)
            table.add_column("running cell")
            table.add_column("env steps", justify="right")
            table.add_column("attempt", justify="right")
            table.add_column("where")
            for s in running:
                table.add_row(s.cell.id, _progress_of(s.cell), str(s.attempts), s.job.describe() if s.job else "")
            self._live.update(table)
        elif line != self._last_line:
            self._last_line = line
            print(line, file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """One line about one cell (a cell held by another process), above the live table or as a line."""
        if not self.enabled:
            return
        if self._live is not None:
            self._live.console.print(text)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the live display."""
        if self._live is not None:
            self._live.stop()
            self._live = None


def _progress_of(cell: Cell) -> str:
    try:
        record = read_record(cell.run_dir)
        return f"{record.env_steps:,}/{record.budget:,}"
    except UserError:
        return "starting"


def _fmt_seconds(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
