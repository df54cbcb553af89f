"""What a SLURM job runs: its cells, side by side (``CellBatch``).

Kept apart from the backend so that a job imports only this, the launcher and submitit,
not the orchestrator with torch and sample-factory behind it (seconds per job).
"""

from __future__ import annotations

import signal
from typing import Any

from submitit.helpers import Checkpointable, DelayedSubmission

from llmexplore.benchmarks.grids.runners.launch import CellLaunch, CellProcesses


class CellBatch(Checkpointable):
    """The callable a job runs: its cells until each ends; checkpointable, so that a job warned of
    its time limit (or of preemption) stops its cells cleanly and is requeued."""

    def __init__(self, launches: list[CellLaunch], stop_grace: float):
        self.launches = launches
        self.stop_grace = stop_grace
        self._processes: CellProcesses | None = None

    def __call__(self) -> dict[str, int]:
        self._processes = CellProcesses(self.launches, self.stop_grace)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        return self._processes.run()

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """SLURM cancels or preempts the job: the cells got SIGTERM too and checkpoint; the job's state,
        not an exit code, then tells the runner what happened (requeued, or ended)."""
        if self._processes is not None:
            self._processes.terminating = True

    def checkpoint(self, *args: Any, **kwargs: Any) -> DelayedSubmission:
        """Called by submitit on the warning signal: stop the cells (they save) and requeue."""
        if self._processes is not None:
            self._processes.requeueing = True
            self._processes.stop(self.stop_grace)
        return DelayedSubmission(CellBatch(self.launches, self.stop_grace))

    def __getstate__(self) -> dict[str, Any]:
        return {"launches": self.launches, "stop_grace": self.stop_grace, "_processes": None}
