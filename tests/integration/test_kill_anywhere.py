"""Kill anywhere, resume, and nothing changes: SIGKILL at moments chosen by the files each command writes.

A training run (14 kills), a two-cell grid (8 kills of the grid and its cells, as when the whole job
dies) and a Motif annotation job (10 kills) are each killed again and again, resumed every time, and finally run to the end. The
invariants (``tests/helpers/run_logs.py``): every log line parses, steps never go back, each episode row
has its intrinsic row under the same trained batch, the record ends where the budget rule says, what a
checkpoint covers is never rewritten by a later session, the run's rows up to its first resume point are
exactly an uninterrupted run's, and the annotation ends with an uninterrupted job's labels.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from llmexplore.agents.checkpoints import list_checkpoints
from llmexplore.benchmarks.run.record import read_record
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.pairs import make_dataset, make_pairs
from tests.helpers.run_logs import LOGS, check_run_folder, rows_through, strict_rows

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUDGET, BATCH = 20480, 512
TRAIN = ["-t", "envs_per_worker=8", "-t", "rollout=32", "-t", f"batch_size={BATCH}", "-t", "save_every_sec=1"]
RUN = ["run", "--method", "rnd", "--task", "nethack:score", "--seed", "5", "--steps", str(BUDGET), *TRAIN,
       "--quiet"]


def _start(args: list[str]) -> subprocess.Popen:
    """The command in its own process group, so a kill takes its children (a grid's cells) too; its
    stderr goes to a file (``_finish`` shows it when the command fails)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    err = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-m", "llmexplore", *args], env=env, cwd=REPO, text=True,
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    proc.err_file = err  # type: ignore[attr-defined]
    return proc


def _finish(proc: subprocess.Popen, timeout: float = 300) -> None:
    """Wait for the command; it must succeed."""
    code = proc.wait(timeout)
    proc.err_file.seek(0)  # type: ignore[attr-defined]
    err = proc.err_file.read()  # type: ignore[attr-defined]
    proc.err_file.close()  # type: ignore[attr-defined]
    assert code == 0, err[-3000:]


def _kill_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 90.0) -> bool:
    """SIGKILL the command's process group once ``ready()`` holds (or it ended by itself: False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.01)
    ended = proc.poll() is not None
    if not ended:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    proc.err_file.close()  # type: ignore[attr-defined]
    return not ended


def _grows(path: Path, by: int = 1) -> Callable[[], bool]:
    """True once ``path`` has ``by`` more lines than now."""
    count = lambda: len(path.read_bytes().splitlines()) if path.exists() else 0  # noqa: E731
    start = count()
    return lambda: count() >= start + by


def _changes(path: Path) -> Callable[[], bool]:
    """True once ``path``'s content differs from now (written, rewritten or replaced)."""
    read = lambda: path.read_bytes() if path.exists() else b""  # noqa: E731
    start = read()
    return lambda: read() != start


def _new_checkpoint(run_dir: Path) -> Callable[[], bool]:
    start = set(list_checkpoints(run_dir))
    return lambda: bool(set(list_checkpoints(run_dir)) - start)


def _after(seconds: float) -> Callable[[], bool]:
    until = time.monotonic() + seconds
    return lambda: time.monotonic() >= until


def _run_moments(run_dir: Path) -> list[Callable[[], bool]]:
    """Fourteen moments, each made when it is used (relative to the files as they are then)."""
    return [
        lambda: _after(0.3),  # still importing
        lambda: _changes(run_dir / "run.json"),  # the first heartbeat
        lambda: _new_checkpoint(run_dir),
        lambda: _grows(run_dir / "episodes.jsonl"),
        lambda: _changes(run_dir / "episodes-through.json"),
        lambda: _grows(run_dir / "metrics.jsonl"),
        lambda: _new_checkpoint(run_dir),
        lambda: _grows(run_dir / "intrinsic.jsonl", 2),
        lambda: _after(2.5),
        lambda: _changes(run_dir / "sf" / "sf_log.txt"),
        lambda: _new_checkpoint(run_dir),
        lambda: _grows(run_dir / "episodes.jsonl", 3),
        lambda: _changes(run_dir / "episodes-through.json"),
        lambda: _new_checkpoint(run_dir),
    ]


def test_a_run_killed_fourteen_times_equals_an_uninterrupted_one_up_to_each_cut(tmp_path: Path):
    reference_dir, run_dir = tmp_path / "reference", tmp_path / "killed"
    _finish(_start([*RUN, "--out", str(reference_dir)]))
    ref = check_run_folder(reference_dir, BUDGET, BATCH)

    kills, snapshots = 0, []
    for moment in _run_moments(run_dir):
        proc = _start([*RUN, "--out", str(run_dir)])
        if _kill_when(proc, moment()):
            kills += 1
            # the logs as the kill left them, and how many sessions the record had: the next session
            # (the one that resumes from this state) is the one at that index in the final record
            sessions = len(read_record(run_dir).sessions) if (run_dir / "run.json").exists() else 0
            snapshots.append(({name: strict_rows_allowing_torn_tail(run_dir / name) for name in LOGS}, sessions))
    _finish(_start([*RUN, "--out", str(run_dir)]))
    assert kills >= 12, f"only {kills} of the kills landed before the run ended by itself"

    rows = check_run_folder(run_dir, BUDGET, BATCH)
    record = read_record(run_dir)
    resumed_at = [s.env_steps_start for s in record.sessions[1:]]
    # a kill before the process wrote its first record leaves no session; every other one is a killed session
    assert {s.status for s in record.sessions[:-1]} <= {"killed"} and len(record.sessions) <= kills + 1
    # what the first resume point covers is the uninterrupted run's, row for row
    first = next((p for p in resumed_at if p > 0), None)
    assert first is not None, "no kill came after a checkpoint"
    log = (run_dir / "sf" / "sf_log.txt").read_text()
    for point in {p for p in resumed_at if p > 0}:  # sample-factory itself loaded the checkpoint at that point
        assert f"env_steps={point}" in log, point
    for name in ("episodes.jsonl", "intrinsic.jsonl"):
        assert rows_through(rows[name], first) == rows_through(ref[name], first), name
    # and no later session rewrote what the checkpoint each resume started from covered
    for snapshot, sessions in snapshots:
        point = record.sessions[sessions].env_steps_start
        for name in LOGS:
            assert rows_through(rows[name], point) == rows_through(snapshot[name], point), (name, point)


def strict_rows_allowing_torn_tail(path: Path) -> list[dict]:
    """A killed writer's file: every line but an unfinished last one parses."""
    if not path.exists():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines()]


GRID = """\
name: kill-anywhere
defaults:
  steps: {budget}
  train: {{envs_per_worker: 8, rollout: 32, batch_size: {batch}, save_every_sec: 1}}
blocks:
  - vary:
      seed: [0, 1]
    tied:
      - {{method: rnd, task: nethack:score}}
"""


def _kill_cells_under(folder: Path) -> None:
    """SIGKILL every process training a cell under ``folder``: a grid's cells run in sessions of their own,
    so killing the grid's process group leaves them, and the whole job dies here as on a failed node."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if " run --out " in command and str(folder) in command:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_grid_killed_eight_times_finishes_every_cell_once(tmp_path: Path):
    grid_file, out = tmp_path / "grid.yaml", tmp_path / "out"
    grid_file.write_text(GRID.format(budget=BUDGET, batch=BATCH))
    cells = [out / "runs" / "rnd" / "nethack-score" / f"seed{seed}" for seed in (0, 1)]
    args = ["grid", str(grid_file), "--out", str(out), "--jobs", "2", "--quiet", "--no-leaderboard"]
    moments = [
        lambda: _after(1.0),
        lambda: _changes(out / "grid.json"),
        lambda: _new_checkpoint(cells[0]),
        lambda: _grows(cells[1] / "episodes.jsonl"),
        lambda: _changes(cells[0] / "episodes-through.json"),
        lambda: _new_checkpoint(cells[1]),
        lambda: _grows(cells[0] / "metrics.jsonl"),
        lambda: _after(4.0),
    ]
    kills = 0
    for moment in moments:
        if _kill_when(_start(args), moment()):
            kills += 1
        _kill_cells_under(out)
    _finish(_start(args), 400)
    assert kills >= 7
    summary = json.loads((out / "grid.json").read_text())
    assert {c["status"] for c in summary["cells"]} == {"complete"}, summary["cells"]
    for cell in cells:
        check_run_folder(cell, BUDGET, BATCH)


def test_an_annotation_killed_ten_times_ends_with_the_uninterrupted_labels(tmp_path: Path):
    pairs = make_pairs(600, seed=11, tie_share=0.05)
    pairs = [(a + f" #{i % 240}", b) if a != b else (a, b) for i, (a, b) in enumerate(pairs)]
    for name in ("killed", "reference"):
        make_dataset(tmp_path / name, pairs)
    labels = f"preference/{ORACLE_ANNOTATOR}_msg_defaultgoal_default.npy"
    base = ["lm", "annotate", "--quiet", "--batch-size", "10"]
    _finish(_start([*base[:2], str(tmp_path / "reference"), *base[2:]]), 120)

    killed = tmp_path / "killed"
    labels_path = killed / labels

    def labelled_more(n: int) -> Callable[[], bool]:
        count = lambda: int((np.load(labels_path) != 3).sum()) if labels_path.exists() else 0  # noqa: E731
        start = count()
        return lambda: count() >= start + n

    moments = [lambda: _after(0.5), lambda: labelled_more(10), lambda: labelled_more(5),
               lambda: labelled_more(20), lambda: _after(1.5), lambda: labelled_more(10),
               lambda: _changes(labels_path), lambda: labelled_more(30), lambda: _after(2.0),
               lambda: labelled_more(10)]
    kills = 0
    for moment in moments:
        proc = _start([*base[:2], str(killed), *base[2:], "--lm", "options.latency_s=0.1"])
        if _kill_when(proc, moment()):
            kills += 1
    _finish(_start([*base[:2], str(killed), *base[2:]]), 120)
    assert kills >= 8
    assert np.array_equal(np.load(labels_path), np.load(tmp_path / "reference" / labels))
