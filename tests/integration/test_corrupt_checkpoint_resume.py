"""A real run saves each checkpoint with its digest and its run's identity; a bit flipped in the newest
checkpoint's weights between two sessions is caught before it is loaded, set aside (named on the console,
kept) and the run resumes from the checkpoint before it and completes (issue 49, class 4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import (CHECKPOINT_KEY, RUN_IDENTITY_KEY, checkpoint_env_steps,
                                           digest_path, list_checkpoints, load_checkpoint_file)
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.atomic import file_sha256
from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_stop_lock_orphan import _wait_stepping

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

ARGS = ["run", "--method", "rnd", "--task", "crafter:reward-free", "--seed", "4", "--steps", "8192",
        "--quiet"]


def _run(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "llmexplore", *ARGS, "--out", str(out)],
                            env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _flip_a_bit_of_the_largest_tensor(path: Path) -> None:
    """One bit in the middle of the largest tensor's bytes (torch stores them uncompressed): the file still
    loads, with one weight slightly off."""
    with zipfile.ZipFile(path) as archive:
        largest = max(archive.infolist(), key=lambda info: info.file_size)
    data = bytearray(path.read_bytes())
    header = largest.header_offset
    name_length = int.from_bytes(data[header + 26:header + 28], "little")  # the zip local file header
    extra_length = int.from_bytes(data[header + 28:header + 30], "little")
    at = header + 30 + name_length + extra_length + largest.file_size // 2
    data[at - at % 4] ^= 0x01  # the lowest mantissa bit of a float32
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_the_newest_checkpoint_is_set_aside_and_the_run_resumes_before_it(tmp_path):
    out = tmp_path / "run"
    first = _run(out)
    _wait_stepping(out, first)
    first.send_signal(signal.SIGINT)  # saves a checkpoint, as Ctrl-C does
    first.communicate(timeout=120)
    assert read_record(out).status == "interrupted"  # short of the budget
    saved = list_checkpoints(out)
    assert len(saved) >= 1
    identity = ResolvedRun.read(out).identity()
    for path in saved:
        assert digest_path(path).read_text().split()[0] == file_sha256(path)
        assert load_checkpoint_file(path)[CHECKPOINT_KEY][RUN_IDENTITY_KEY] == identity

    newest = saved[-1]
    _flip_a_bit_of_the_largest_tensor(newest)
    second = _run(out)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-3000:]
    assert f"skipped corrupt checkpoint {newest.name} (its SHA-256 differs" in err
    if len(saved) > 1:
        assert f"resuming from {saved[-2].name}" in err
    else:
        assert "no usable checkpoint left: starting from the beginning" in err
    assert (newest.parent / f"corrupt-{newest.name}").exists()  # kept for inspection
    record = read_record(out)
    assert [s.status for s in record.sessions] == ["interrupted", "complete"]
    assert record.sessions[1].env_steps_start == (checkpoint_env_steps(saved[-2]) if len(saved) > 1 else 0)
    steps = [json.loads(line)["env_steps"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert steps == sorted(steps)  # the stretch trained again replaced, not duplicated
