"""Issue 37, class 6: operating-system errors reach the user as one clear message, not a traceback:
output piped into `head`, a full disk (the run record still says what happened), a folder where the
run lock should be, and `maestro check` on a file that is not UTF-8 or nests too deeply."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.atomic import atomic_write_json
from llmexplore.benchmarks.run.lock import LOCK_FILE, RunFolderLock
from llmexplore.benchmarks.run.space_reserve import RESERVE_BYTES, SpaceReserve
from llmexplore.cli import main
from llmexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [["schema"], ["envs"], ["methods"], ["methods", "--json"]])
def test_output_piped_into_a_reader_that_stops_early_is_no_traceback(command):
    """`llmexplore schema | head -1`: the reader closes the pipe after one line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    pipeline = f"{sys.executable} -m llmexplore {' '.join(command)} | head -c 10 > /dev/null; echo ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() in ("0", "141")  # 0 when the output fitted in the pipe before head left


def test_a_folder_where_the_run_lock_belongs_is_a_clear_error(tmp_path: Path, capsys):
    (tmp_path / LOCK_FILE).mkdir()
    with pytest.raises(ConfigError, match="is a folder; the run keeps its lock file there") as err:
        RunFolderLock(tmp_path).acquire()
    assert "rm -r" in str(err.value)
    code = main(["run", "--method", "rnd", "--task", "crafter:reward-free", "--steps", "4096", "--quiet",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().err
    assert code == 2 and "is a folder" in out and "Traceback" not in out


@pytest.mark.parametrize("source,message", [
    (b"def termination(x):\n    return '\xff'\n", "not UTF-8 text"),
    (b"def termination(x):\n    return " + b"-" * 1500 + b"1\n", "nests expressions too deeply"),
    (b"def termination(x):\n    return " + b"not " * 1500 + b"x\n", "nests expressions too deeply"),
    (b"def termination(x):\n    return " + b"(" * 1500 + b"1" + b")" * 1500 + b"\n", "too many nested parentheses"),
])
def test_maestro_check_on_unreadable_or_too_deep_code_is_one_clear_error(tmp_path: Path, capsys, source, message):
    path = tmp_path / "code.py"
    path.write_bytes(source)
    assert main(["maestro", "check", str(path), "--function", "termination"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 4 MiB file system (tmpfs); needs the right to mount one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                                                       capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small file system here (needs root or CAP_SYS_ADMIN)")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb", buffering=0) as fh:  # unbuffered: nothing left to fail at close
        for size in (1 << 16, 1 << 10, 1):
            try:
                while True:
                    fh.write(bytes(size))
            except OSError:
                pass


def test_a_full_disk_still_lets_the_run_record_say_what_happened(small_disk: Path, capsys):
    run_dir = small_disk / "run"
    run_dir.mkdir()
    atomic_write_json(run_dir / "run.json", {"status": "running"})
    reserve = SpaceReserve(run_dir)
    reserve.hold()
    assert (run_dir / ".space-reserve").stat().st_size == RESERVE_BYTES
    _fill(small_disk)
    final = {"status": "failed", "error": {"message": "OSError: [Errno 28] No space left on device"},
             "curve": ["x" * 100] * 500}
    with pytest.raises(OSError):  # without the reserve the final record cannot land
        atomic_write_json(run_dir / "run.json", final)
    reserve.write(lambda: atomic_write_json(run_dir / "run.json", final))
    reserve.release()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert not (run_dir / ".space-reserve").exists()
    # and the command line says what to do about it
    from llmexplore.cli import describe_os_error

    message = describe_os_error(OSError(28, "No space left on device", str(run_dir / "episodes.jsonl")))
    assert "episodes.jsonl: No space left on device" in message and "free space" in message
