"""Who holds a lock file: the process id, host and start time a holder writes into the file it locks,
so that whoever is refused can be told whom to wait for (run folders, Motif output folders)."""

from __future__ import annotations

import json
import os
import socket
import time


def write_holder(fd: int) -> None:
    """Write this process's pid, host and start time into the locked file ``fd`` (replacing what was there)."""
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)


def read_holder(fd: int) -> dict:
    """What the holder of the lock file ``fd`` wrote into it; empty when nothing readable is there."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def describe_holder(holder: dict) -> str:
    """``process PID on host HOST (since TIME)``: who holds a lock, in words."""
    return (f"process {holder.get('pid', '?')} on host {holder.get('host', '?')} "
            f"(since {holder.get('since', '?')})")
