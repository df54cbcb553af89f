"""An outer guard for running generated code: a forked child under OS limits, killed on time-out.

The in-process meter (runtime.py) bounds every operation it can see; this guard bounds what it
cannot, should anything slip through: the work runs in a child process with an address-space
limit (RLIMIT_AS), a CPU-time limit (RLIMIT_CPU), no new file descriptors (RLIMIT_NOFILE) and a
wall-clock time-out after which the parent kills it. It costs a fork per use (milliseconds; see
tests/perf/maestro_sandbox.py), so it guards the one-off checks of new code (``check_code``),
not the per-step calls of code that already passed them.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

#: POSIX with fork: where the guard can run (elsewhere the work runs in-process, metered only)
AVAILABLE = hasattr(os, "fork") and sys.platform.startswith(("linux", "darwin"))


@dataclass(frozen=True)
class ProcessLimits:
    """OS limits of the guarded child."""

    #: bytes of address space the child may use on top of what it inherits
    extra_address_space: int = 1 << 30
    #: CPU seconds the child may use
    cpu_s: int = 10
    #: wall-clock seconds before the parent kills the child
    timeout_s: float = 15.0


class IsolatedFailure(Exception):
    """The guarded child died, ran out of time or memory, or sent nothing back."""


def _current_address_space() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _limit_self(limits: ProcessLimits) -> None:
    import resource

    def lower(kind: int, value: int) -> None:
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if soft != resource.RLIM_INFINITY:
            value = min(value, soft)
        resource.setrlimit(kind, (value, value if hard == resource.RLIM_INFINITY else hard))

    lower(resource.RLIMIT_AS, _current_address_space() + limits.extra_address_space)
    lower(resource.RLIMIT_CPU, max(1, int(limits.cpu_s)))
    lower(resource.RLIMIT_NOFILE, 0)  # the pipe to the parent is already open; nothing new opens


def run_isolated(work: Callable[[], Any], limits: ProcessLimits = ProcessLimits()) -> Any:
    """``work()`` run in a forked child under ``limits``: its return value, or the exception it raised
    (re-raised here, when it pickles); ``IsolatedFailure`` when the child dies or times out."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(read_fd)
            _limit_self(limits)
            try:
                payload = pickle.dumps(("ok", work()))
            except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
                try:
                    payload = pickle.dumps(("raised", exc))
                except Exception:
                    payload = pickle.dumps(("failed", f"{type(exc).__name__} (not picklable)"))
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view):]
        except BaseException:  # noqa: BLE001
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, pid, limits.timeout_s)
    finally:
        os.close(read_fd)
    if not data:
        raise IsolatedFailure("the guarded process died without an answer (out of memory or CPU time)")
    kind, value = pickle.loads(data)
    if kind == "ok":
        return value
    if kind == "raised":
        raise value
    raise IsolatedFailure(value)


def _read_all(fd: int, pid: int, timeout_s: float) -> bytes:
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise IsolatedFailure(f"the guarded process took longer than {timeout_s:g} s and was killed")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
