"""Fails a parallel run within seconds when one of sample-factory's child processes dies.

sample-factory's runner waits for messages from its learner, inference and rollout processes; when
one of them dies (an exception at start, the OOM killer) nothing arrives and the runner waited for
good, with no message (a run once sat 11 minutes this way). The watchdog checks the children every
``CHECK_EVERY_SEC`` from the runner's own event loop; a child that has exited while training goes on
ends the run as failed, naming the process and its exit code, after stopping the others.
"""

from __future__ import annotations

from typing import Any

from signal_slot.signal_slot import EventLoopObject, Timer

#: seconds between two checks of the child processes
CHECK_EVERY_SEC = 1.0


class ChildWatchdog(EventLoopObject):
    """Watches ``processes()`` (sample-factory ``EventLoopProcess`` objects) from ``event_loop``."""

    def __init__(self, event_loop: Any, processes: Any, on_failure: Any, period: float = CHECK_EVERY_SEC):
        EventLoopObject.__init__(self, event_loop, "llmexplore_child_watchdog")
        self.processes = processes
        self.on_failure = on_failure
        self.failure: str | None = None
        self.stopping = False
        self.timer = Timer(event_loop, period)
        self.timer.timeout.connect(self.check)

    def check(self) -> None:
        """Timer tick: at the first child found exited, stop the timer, terminate the other children and
        report once through ``on_failure``. Does nothing once stopping or failed."""
        if self.failure is not None or self.stopping:
            return
        children = list(self.processes())
        for child in children:
            code = child.exitcode
            if code is None:  # running, or not started yet
                continue
            self.failure = (f"sample-factory's process {child.name} (pid {child.pid}) exited with code {code} "
                            "while training; its error is printed above it and in sf/sf_log.txt")
            self.timer.stop()
            for other in children:
                if other is not child and other.is_alive():
                    other.terminate()
            self.on_failure(self.failure)
            return
