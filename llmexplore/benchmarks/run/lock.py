"""One writer per run folder: an advisory lock that names its holder.

``llmexplore run`` holds ``RUN_DIR/.run.lock`` (``fcntl.flock``) while it trains; a second
process on the same folder (a rerun while an orphaned cell still trains, two grids sharing an
output folder) is refused with the holder's PID and host instead of interleaving its writes. The
kernel drops the lock when the holder dies, however it dies, so a stale lock file never blocks a
rerun. Processes the holder forks (sample-factory's workers) inherit the lock and keep the folder
locked until they exit too.

Anyone may ask who holds a folder without disturbing it (``folder_holder``: a grid whose cell is
trained by another process waits for it instead of counting a failure). The question takes a shared
lock for an instant; ``acquire`` tells such a look from a holder and waits it out.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from types import TracebackType

from llmexplore.errors import ConfigError
from llmexplore.lock_holders import describe_holder, read_holder, write_holder

LOCK_FILE = ".run.lock"
#: what a refused ``llmexplore run`` says (a grid tells a refusal from a failure by it)
REFUSAL_TEXT = "is in use by"
log = logging.getLogger(__name__)


class RunFolderLock:
    """``with RunFolderLock(run_dir):`` holds the folder or raises ConfigError naming who does."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Lock the folder and write this process's pid, host and start time into the lock file; ConfigError
        naming the holder when another process has it. A file system without locks: warn, run unguarded."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except IsADirectoryError:
            raise ConfigError(f"{self.path} is a folder; the run keeps its lock file there",
                              hint=f"remove that folder (rm -r {self.path}) and rerun") from None
        except OSError as exc:
            raise ConfigError(f"cannot create the run's lock file {self.path}: {exc.strerror or exc}",
                              hint="check that the run folder is writable, or choose another --out") from None
        try:
            _lock_exclusively(fd)
        except BlockingIOError:
            holder = read_holder(fd)
            os.close(fd)
            raise ConfigError(
                f"run folder {self.path.parent} {REFUSAL_TEXT} {describe_holder(holder)}",
                hint="wait for that run to finish, or stop it (kill PID on that host) and rerun: the "
                     "rerun resumes from its last checkpoint") from None
        except OSError as exc:  # a file system without locks (some NFS set-ups): run unguarded, say so
            os.close(fd)
            log.warning("run folder %s cannot be locked (%s); a second writer would not be refused",
                        self.path.parent, exc.strerror or exc)
            return
        write_holder(fd)
        self._fd = fd

    def release(self) -> None:
        """Unlock and close the lock file (left on disk: a stale one blocks nobody); a no-op when not held."""
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunFolderLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


#: how long ``acquire`` waits out others only looking at who holds the folder (each looks for microseconds)
_LOOK_WAIT_S = 2.0


def _lock_exclusively(fd: int) -> None:
    """``flock`` LOCK_EX without blocking; BlockingIOError when a holder has it. Shared locks are only
    ``folder_holder`` looking: waited out, up to ``_LOOK_WAIT_S``."""
    import fcntl

    deadline = time.monotonic() + _LOOK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            try:  # a shared lock is to be had: nobody holds the folder, someone only looks
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise BlockingIOError("held") from None
            fcntl.flock(fd, fcntl.LOCK_UN)
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def folder_holder(run_dir: str | Path) -> dict | None:
    """Who holds ``run_dir``'s lock (``{"pid", "host", "since"}``, as far as its lock file says), or None
    when nobody does: a look that takes a shared lock for an instant and never blocks a holder."""
    import fcntl

    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file (never run) or not readable: nobody to wait for
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holder(fd)
    except OSError:  # a file system without locks: nobody can be seen holding it
        return None
    finally:
        os.close(fd)  # closing drops the shared lock too
    return None
