"""One writer per Motif output folder: ``motif collect`` and ``motif train-reward`` hold a lock naming them.

Two collections into one ``--out`` would share the temporary folder the dataset is written into
(one removing the other's arrays as a crashed write's leftovers) and the second would open a
half-written dataset; two reward-model trainings would write one folder's checkpoints in turn. The
first holds ``.<name>.lock`` beside the folder (``fcntl.flock``, dropped by the kernel however the
holder ends, so a stale file blocks nobody) from before its work until its result is in place; a
second is refused at once, naming the first. The lock file is removed once the result is written (a
later writer is refused by the result itself; one that opened the file just before sees the result
as soon as it holds the lock, as the callers check again under the lock).
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from llmexplore.errors import ConfigError


def lock_path(root: Path) -> Path:
    """The lock file of output folder ``root``: hidden, beside it (a dataset folder must stay empty)."""
    return root.with_name(f".{root.name}.lock")


@contextmanager
def folder_writer(root: str | Path, command: str, result: str) -> Iterator[None]:
    """Hold the output folder ``root`` for writing, or raise ConfigError naming the process that does.
    ``command`` names the writer (``motif collect``), ``result`` the file or folder inside ``root`` whose
    presence means the work is done (then the lock file goes)."""
    import fcntl

    root = Path(root)
    path = lock_path(root)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot create the lock file {path}: {exc.strerror or exc}",
                          hint="choose a --out in a writable folder") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            raise ConfigError(
                f"another `{command}` is writing to {root}: process {holder.get('pid', '?')} "
                f"on host {holder.get('host', '?')} (since {holder.get('since', '?')})",
                hint="wait for it and use what it writes, or choose another --out") from None
        except OSError:  # a file system without locks: nothing to guard with, as before
            pass
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                  "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode(), 0)
        yield
        if (root / result).exists():  # written: any later writer is refused by the result itself
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)  # drops the lock


def _read_holder(fd: int) -> dict:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
