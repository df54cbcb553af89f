"""Bad records, corrupt caches and unusable output paths end in one clear error (issue 28).

Each case once gave a traceback: a ``run.json`` holding valid JSON that is not an object, an SQLite
LM cache damaged mid-file, and ``--out`` (or ``--cache``) under a regular file. Each must give one
error naming the file and the fix; the leaderboard lists a bad record as unreadable and builds the
rest; nothing already written is touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.atomic import log_tail
from llmexplore.benchmarks.results.aggregate import collect
from llmexplore.benchmarks.evaluation.eval_record import read_evaluation
from llmexplore.benchmarks.run.record import RunRecord, read_record
from llmexplore.errors import ConfigError, DataError
from llmexplore.lm.base import Completion
from llmexplore.lm.cache import LMCache

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True,
                          env=env, timeout=180)


def _complete_record(run_dir: Path) -> None:
    RunRecord(status="complete", cell="none/nethack:score/seed0",
              spec={"method": "none", "task": "nethack:score", "seed": 0}, environment={}, started_at="t0",
              updated_at="t1", budget=100, env_steps=120, wall_seconds=1.0, steps_per_second=120.0,
              metric="progression", final_metrics={"progression": 1.5, "return": 2.0}).write(run_dir)


NOT_OBJECTS = [("[1, 2, 3]", "an array"), ("null", "null"), ("42", "a number"), ('"run"', "a string")]


@pytest.mark.parametrize("text,kind", NOT_OBJECTS)
def test_a_record_that_is_not_an_object_is_a_clear_error(tmp_path, text, kind):
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(DataError, match=f"holds {kind} instead of a JSON object"):
        read_record(tmp_path)
    (tmp_path / "eval.json").write_text(text)
    with pytest.raises(DataError, match=f"holds {kind} instead of a JSON object"):
        read_evaluation(tmp_path / "eval.json")
    (tmp_path / "run.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="cannot be read|not valid JSON"):
        read_record(tmp_path)


def test_records_from_a_newer_schema_or_another_program_are_refused_not_misread(tmp_path):
    _complete_record(tmp_path)
    data = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**data, "schema_version": 99}))
    with pytest.raises(DataError, match="uses run record schema 99; this llmexplore reads up to") as err:
        read_record(tmp_path)
    assert err.value.hint == "upgrade llmexplore"
    (tmp_path / "eval.json").write_text(json.dumps({**data, "schema_version": 1}))
    with pytest.raises(DataError, match="is not an llmexplore evaluation record"):
        read_evaluation(tmp_path / "eval.json")


def test_a_failed_runs_log_tail_is_its_last_lines_read_from_the_end(tmp_path):
    log = tmp_path / "cell.log"
    log.write_bytes(b"".join(b"line %d \xff\n" % i for i in range(100_000)))
    assert log_tail(log, lines=3) == "line 99997 \ufffd\nline 99998 \ufffd\nline 99999 \ufffd"
    assert log_tail(tmp_path / "missing.log", lines=3) == ""


def test_the_leaderboard_lists_a_bad_record_and_builds_the_rest(tmp_path):
    runs = tmp_path / "runs"
    _complete_record(runs / "good")
    for name, text in (("array", "[1,2,3]"), ("null", "null")):
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(text)
    found = collect(runs)
    assert len(found.runs) == 1
    unreadable = sorted(Path(r["path"]).name for r in found.excluded if r["status"] == "unreadable")
    assert unreadable == ["array", "null"]
    done = _cli("leaderboard", str(runs))
    assert done.returncode == 0, done.stderr
    table = (runs / "leaderboard" / "leaderboard.md").read_text()
    assert "unreadable" in table and "instead of a JSON object" in table and "nethack:score" in table
    assert (runs / "array" / "run.json").read_text() == "[1,2,3]"  # nothing touched


def test_run_refuses_a_folder_whose_record_is_not_an_object(tmp_path):
    (tmp_path / "run.json").write_text("[1,2,3]")
    done = _cli("run", "--method", "none", "--task", "nethack:score", "--steps", "4096",
                "--out", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "instead of a JSON object" in done.stderr and "move the file aside" in done.stderr
    assert (tmp_path / "run.json").read_text() == "[1,2,3]"


def test_a_cache_damaged_mid_file_is_a_clear_error_offering_to_move_it_aside(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = LMCache(path)
    for _ in range(40):
        cache.put_many("m", [(os.urandom(16), Completion("x" * 200, "stop", None)) for _ in range(100)])
    cache.close()
    import sqlite3

    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    size = path.stat().st_size
    with open(path, "r+b") as fh:  # damage pages across the middle, keeping the header intact
        for offset in range(8192, size, 16384):
            fh.seek(offset)
            fh.write(b"\x5a" * 4096)
    damaged = LMCache(path)
    for use in (lambda: damaged.get_many([os.urandom(16)]), damaged.entries, damaged.models,
                lambda: damaged.put_many("m", [(os.urandom(16), Completion("y", None, None))] * 300)):
        with pytest.raises(DataError) as info:
            use()
        text = str(info.value)
        assert "(the file is damaged)" in text and f"mv {path} {path}.corrupt-" in text
    done = _cli("lm", "cache", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "move it aside" in done.stderr


def test_a_cache_under_a_regular_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot create the LM cache"):
        LMCache(blocker / "sub" / "cache.sqlite")


OUT_COMMANDS = [
    ("leaderboard", ["leaderboard", "{runs}", "--out", "{out}"]),
    ("motif-collect", ["motif", "collect", "--task", "nethack:score", "--pairs", "4", "--out", "{out}"]),
    ("grid", ["grid", str(REPO / "configs" / "quickstart.yaml"), "--out", "{out}"]),
    ("maestro-generate", ["maestro", "generate", "--out", "{out}"]),
    ("train-reward", ["motif", "train-reward", "--dataset", "{runs}", "--annotation", "x", "--out", "{out}"]),
    ("run", ["run", "--method", "none", "--task", "nethack:score", "--steps", "4096", "--out", "{out}"]),
]


@pytest.mark.parametrize("argv", [pytest.param(a, id=n) for n, a in OUT_COMMANDS])
def test_out_under_a_regular_file_is_one_clear_error(tmp_path, argv, capsys):
    from llmexplore.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    runs = tmp_path / "runs"
    _complete_record(runs / "good")
    assert main([a.format(out=blocker / "sub", runs=runs) for a in argv]) == 2  # in-process: no traceback
    err = capsys.readouterr().err
    assert "cannot write to output directory" in err and "--out" in err
    assert blocker.read_text() == "keep me"


def test_annotate_with_a_cache_under_a_regular_file_is_one_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    dataset = tmp_path / "pairs"
    collected = _cli("motif", "collect", "--task", "nethack:score", "--pairs", "4", "--out", str(dataset))
    assert collected.returncode == 0, collected.stderr
    done = _cli("lm", "annotate", str(dataset), "--cache", str(blocker / "c.sqlite"), "--quiet")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cannot create the LM cache" in done.stderr
