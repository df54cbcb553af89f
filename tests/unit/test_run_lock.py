"""The run-folder lock (issue 28): one writer, the second refused naming the first; freed on any exit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.lock import LOCK_FILE, RunFolderLock, folder_holder
from llmexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

HOLD = """
import sys, time
from llmexplore.benchmarks.run.lock import RunFolderLock
lock = RunFolderLock(sys.argv[1]); lock.acquire(); print("held", flush=True); time.sleep(60)
"""


def test_a_second_writer_is_refused_with_the_holders_pid_and_host(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as info:
            RunFolderLock(tmp_path).acquire()
        assert f"in use by process {holder.pid} on host {socket.gethostname()}" in str(info.value)
    finally:
        holder.kill()  # SIGKILL: the kernel frees the lock, the stale file blocks nothing
        holder.wait()
        holder.stdout.close()
    with RunFolderLock(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    with RunFolderLock(tmp_path):  # released on exit, taken again
        pass


def test_a_file_system_without_locks_runs_unguarded_with_a_warning(tmp_path, monkeypatch, caplog):
    import fcntl

    def no_locks(fd, op):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with caplog.at_level("WARNING"):
        RunFolderLock(tmp_path).acquire()
    assert "cannot be locked" in caplog.text


LOOK = """
import sys, time
from llmexplore.benchmarks.run.lock import folder_holder
print("looking", flush=True)
end = time.monotonic() + 30
while time.monotonic() < end:
    folder_holder(sys.argv[1])
"""


def test_who_holds_a_folder_is_seen_and_looking_never_refuses_a_writer(tmp_path):
    assert folder_holder(tmp_path) is None  # never run
    with RunFolderLock(tmp_path):
        assert folder_holder(tmp_path)["pid"] == os.getpid()
    assert folder_holder(tmp_path) is None  # the stale lock file names nobody
    env = dict(os.environ, PYTHONPATH=str(REPO))
    looker = subprocess.Popen([sys.executable, "-c", LOOK, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert looker.stdout.readline().strip() == "looking"
        for _ in range(300):  # a grid looks while a cell takes its folder: the cell is never refused for it
            with RunFolderLock(tmp_path):
                pass
    finally:
        looker.kill()
        looker.wait()
        looker.stdout.close()
