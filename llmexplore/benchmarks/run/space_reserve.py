"""Room for the last word: a small file set aside when a run starts and given up when the disk fills.

A full disk stops training, and then the run record itself cannot be rewritten (an atomic write
needs room for the new copy), so the folder would keep saying "running". The reserve is deleted
when a write meets ENOSPC or EDQUOT, and the write is tried once more, so the record can still
say that the run failed and why.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable

RESERVE_FILE = ".space-reserve"
#: far more than a run record needs (a few hundred KB with a long curve)
RESERVE_BYTES = 1 << 20
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class SpaceReserve:
    """``hold()`` when a run starts, ``write(fn)`` for the writes that must land, ``release()`` at the end."""

    def __init__(self, folder: str | os.PathLike):
        self.path = Path(folder) / RESERVE_FILE

    def hold(self) -> None:
        """Set the room aside; a disk already too full for it gets no reserve (the run fails soon anyway)."""
        try:
            with open(self.path, "wb") as fh:
                fh.write(bytes(RESERVE_BYTES))  # real bytes, not a sparse file: the blocks are allocated
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            self.release()

    def release(self) -> None:
        """Delete the reserve file, freeing its room; a no-op when there is none."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def write(self, write: Callable[[], None]) -> None:
        """Run ``write``; when the disk is full, give up the reserve and run it once more."""
        try:
            write()
        except OSError as exc:
            if exc.errno not in _DISK_FULL or not self.path.exists():
                raise
            self.release()
            write()
