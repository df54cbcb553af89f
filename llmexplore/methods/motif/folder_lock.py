"""One writer per Motif output folder: ``motif collect`` and ``motif train-reward`` hold a lock naming them.

Two collections into one ``--out`` would share the temporary folder the dataset is written into
(one removing the other's arrays as a crashed write's leftovers) and the second would open a
half-written dataset; two reward-model trainings would write one folder's checkpoints in turn. The
first holds ``.<name>.lock`` beside the folder (``fcntl.flock``, dropped by the kernel however the
holder ends, so a stale file blocks nobody) from before its work until its result is in place; a
second is refused at once, naming the first. The holder removes the lock file before letting go, so
none is left beside the folder; a process that opened it just before takes the new one instead.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from llmexplore.errors import ConfigError
from llmexplore.lock_holders import describe_holder, read_holder, write_holder


def lock_path(root: Path) -> Path:
    """The lock file of output folder ``root``: hidden, beside it (a dataset folder must stay empty)."""
    return root.with_name(f".{root.name}.lock")


@contextmanager
def folder_writer(root: str | Path, command: str) -> Iterator[None]:
    """Hold the output folder ``root`` for writing, or raise ConfigError naming the process (running
    ``command``, e.g. ``motif collect``) that does. The lock file goes when the holder lets go."""
    root = Path(root)
    path = lock_path(root)
    fd = _locked_file(path, root, command)
    try:
        write_holder(fd)
        yield
    finally:
        path.unlink(missing_ok=True)  # still held: whoever opened this file meanwhile sees it gone and retries
        os.close(fd)  # drops the lock


def _locked_file(path: Path, root: Path, command: str) -> int:
    """The lock file, open and locked; ConfigError naming its holder. A file its holder removed while this
    process waited for it is no lock any more: open the one now at ``path`` (``_is_current``)."""
    import fcntl

    while True:
        try:
            root.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot create the lock file {path}: {exc.strerror or exc}",
                              hint="choose a --out in a writable folder") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(fd)
            os.close(fd)
            raise ConfigError(
                f"another `{command}` is writing to {root}: {describe_holder(holder)}",
                hint="wait for it and use what it writes, or choose another --out") from None
        except OSError:  # a file system without locks: nothing to guard with, as before
            return fd
        if _is_current(fd, path):
            return fd
        os.close(fd)


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (its holder removes it before letting go)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
