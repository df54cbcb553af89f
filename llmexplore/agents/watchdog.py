"""Fails a parallel run within seconds when one of sample-factory's child processes dies.

sample-factory's runner waits for messages from its learner, inference and rollout processes; when
one of them dies (an exception at start, the OOM killer) nothing arrives and the runner waited for
good, with no message (a run once sat 11 minutes this way; a rollout worker that died while
decorrelating left the runner printing ``Fps 0.0`` until its 360-s timeout). The watchdog checks the
children every ``CHECK_EVERY_SEC`` from the runner's own event loop, from the moment the processes
start; a child that has exited while training goes on ends the run as failed, after stopping the others,
with a message naming the process, its exit code and its last lines in sample-factory's log (a run
started quietly prints none of them on the console, and every process writes to the one file).
"""

from __future__ import annotations

import logging
import re
import signal
import sys
from pathlib import Path
from typing import Any, Callable

from signal_slot.signal_slot import EventLoopObject, Timer

#: seconds between two checks of the child processes
CHECK_EVERY_SEC = 1.0
#: how many of the dead process's log lines the failure message quotes
LOG_LINES = 12
#: how much of the end of a log file is read for them
LOG_TAIL_BYTES = 256 * 1024
#: sample-factory's log line prefix, ``[time][pid] ``; lines without one continue the line before (tracebacks)
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\[(\d+)\] ")
#: terminal colour codes, which Python 3.13 puts into tracebacks that a process logs
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def sample_factory_log_files() -> list[Path]:
    """The files sample-factory's logger writes to in this process (its runner opens ``sf_log.txt``); none
    where sample-factory was never imported (importing it now would only delay the report)."""
    utils = sys.modules.get("sample_factory.utils.utils")
    handlers = getattr(getattr(utils, "log", None), "handlers", [])
    return [Path(handler.baseFilename) for handler in handlers if isinstance(handler, logging.FileHandler)]


def last_log_lines(path: Path, pid: int, count: int = LOG_LINES) -> list[str]:
    """The last ``count`` lines that process ``pid`` wrote to a sample-factory log, tracebacks included."""
    try:
        with open(path, "rb") as stream:
            stream.seek(max(0, stream.seek(0, 2) - LOG_TAIL_BYTES))
            text = _COLOURS.sub("", stream.read().decode("utf-8", errors="replace"))
    except OSError:
        return []
    lines, writer = [], None
    for line in text.splitlines():
        tagged = _LOG_PREFIX.match(line)
        if tagged:
            writer = int(tagged.group(1))
        if writer == pid and line.strip():
            lines.append(line.rstrip())
    return lines[-count:]


def describe_exit(code: int) -> str:
    """``exited with code 3``, or the signal that ended the process (-9: ``killed by SIGKILL``)."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    hint = " (the out-of-memory killer sends it)" if -code == signal.SIGKILL else ""
    return f"was killed by {name}{hint} (exit code {code})"


def failure_message(child: Any, code: int, log_files: list[Path]) -> str:
    """What the run reports for a dead child: its name, pid and exit, and its last log lines."""
    message = f"sample-factory's process {child.name} (pid {child.pid}) {describe_exit(code)} while training"
    for path in log_files:
        lines = last_log_lines(path, child.pid)
        if lines:
            quoted = "\n    ".join(lines)
            return f"{message}; its last lines in {path.parent.name}/{path.name}:\n    {quoted}"
    return f"{message}; it wrote nothing to sample-factory's log (a crash in native code, or killed)"


class ChildWatchdog(EventLoopObject):
    """Watches ``processes()`` (sample-factory ``EventLoopProcess`` objects) from ``event_loop``."""

    def __init__(self, event_loop: Any, processes: Any, on_failure: Any, period: float = CHECK_EVERY_SEC,
                 log_files: Callable[[], list[Path]] = sample_factory_log_files):
        EventLoopObject.__init__(self, event_loop, "llmexplore_child_watchdog")
        self.processes = processes
        self.on_failure = on_failure
        self.log_files = log_files
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
            self.failure = failure_message(child, code, self.log_files())
            self.timer.stop()
            for other in children:
                if other is not child and other.is_alive():
                    other.terminate()
            self.on_failure(self.failure)
            return
