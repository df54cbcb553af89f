"""What the SLURM cluster says about the grid's jobs and nodes: squeue and sinfo, never sacct.

submitit asks ``sacct`` for job states, which needs SLURM's accounting storage; most small
clusters run without it, and there submitit warns every few seconds and never sees a job end.
``squeue --states=all`` answers on every cluster, for pending, running and recently ended
jobs alike (for ``MinJobAge`` seconds after the end, 300 by default); a job it no longer
lists has ended. One call covers all of the user's jobs, at most every ``min_interval_s``.
"""

from __future__ import annotations

import logging
import math
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

#: states after which a job never runs again (PREEMPTED may be requeued: the backend gives it time)
ENDED = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                   "REVOKED", "SPECIAL_EXIT", "TIMEOUT", "GONE"})
#: a job squeue does not list (yet): just submitted, or ended longer ago than MinJobAge
GONE = "GONE"
#: how long a just-submitted job may be missing from squeue before it counts as gone
VISIBLE_WITHIN_S = 60.0

Runner = Callable[[list[str]], subprocess.CompletedProcess]


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@dataclass(frozen=True)
class JobState:
    state: str  # squeue's %T: PENDING, RUNNING, COMPLETED, CANCELLED, ... or GONE
    reason: str = ""  # squeue's %r: why a job waits (Resources, BeginTime, ...); "None" becomes ""

    @property
    def ended(self) -> bool:
        """Whether the job never runs again (``ENDED``, GONE too); PREEMPTED is not: it may be requeued."""
        return self.state in ENDED

    def __str__(self) -> str:
        return f"{self.state} ({self.reason})" if self.reason else self.state


class SlurmQueue:
    """Job states of the jobs this grid submitted, from squeue, refreshed at most every few seconds."""

    def __init__(self, min_interval_s: float = 5.0, run: Runner = _run):
        self.min_interval_s = min_interval_s
        self._run = run
        self._states: dict[str, JobState] = {}
        self._known_since: dict[str, float] = {}
        self._checked = -math.inf
        self.error: str | None = None  # the last squeue failure, if the last call failed

    def watch(self, job_id: str) -> None:
        """A job just submitted (or adopted): ask about it at the next look."""
        self._known_since.setdefault(job_id, time.time())
        self._checked = -math.inf

    def state(self, job_id: str) -> JobState:
        """The job's last state from squeue (asked again when older than ``min_interval_s``); a job it does
        not list is UNKNOWN while squeue fails, PENDING just after submission, GONE after that."""
        if time.time() - self._checked >= self.min_interval_s:
            self.refresh()
        found = self._states.get(job_id)
        if found is not None:
            return found
        if self.error is not None:
            return JobState("UNKNOWN", f"squeue failed: {self.error[:120]}")
        if time.time() - self._known_since.get(job_id, 0.0) < VISIBLE_WITHIN_S:
            return JobState("PENDING", "not listed by squeue yet")
        return JobState(GONE)

    def refresh(self) -> None:
        """One squeue call for every job of this user; on failure keep the last answer (a busy or
        restarting controller is not a reason to count jobs as ended)."""
        self._checked = time.time()
        result = self._run(["squeue", "--me", "--array", "--noheader", "--states=all", "--format=%i|%T|%r"])
        if result.returncode != 0:
            self.error = (result.stderr or result.stdout).strip()[:300] or f"exit code {result.returncode}"
            return
        self.error = None
        states: dict[str, JobState] = {}
        for line in result.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3 and parts[0]:
                states[parts[0]] = JobState(parts[1], "" if parts[2] in ("None", "(null)") else parts[2])
        # a job that dropped out of squeue after we saw it end keeps its last state
        self._states = {k: v for k, v in self._states.items() if v.ended and k not in states} | states


@dataclass(frozen=True)
class NodeLimits:
    name: str
    cpus: int
    memory_mb: int

    def __str__(self) -> str:
        return f"{self.name} ({self.cpus} CPUs, {self.memory_mb / 1024:.1f} GB)"


def node_limits(partition: str | None, run: Runner = _run) -> list[NodeLimits]:
    """CPUs and memory of every node of the partition (the default one if None), from sinfo."""
    command = ["sinfo", "--Node", "--noheader", "--format=%N|%c|%m"]
    if partition:
        command.append(f"--partition={partition}")
    result = run(command)
    if result.returncode != 0:
        raise RuntimeError((result.stderr or result.stdout).strip()[:300] or f"sinfo: exit code {result.returncode}")
    nodes: dict[str, NodeLimits] = {}
    for line in result.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        try:
            nodes[parts[0]] = NodeLimits(parts[0], int(parts[1].rstrip("+")), int(parts[2].rstrip("+")))
        except ValueError:  # a node whose memory is not configured reads "1" or "N/A": no limit known
            continue
    return list(nodes.values())


class _DropSacctWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Bypassing sacct error" not in record.getMessage()


def quiet_submitit() -> None:
    """submitit's state polling is not used with a real cluster; should anything still call sacct on a
    cluster without accounting, its warning (one every few seconds) stays out of the grid's output."""
    logger = logging.getLogger("submitit")
    if not any(isinstance(f, _DropSacctWarnings) for f in logger.filters):
        logger.addFilter(_DropSacctWarnings())
