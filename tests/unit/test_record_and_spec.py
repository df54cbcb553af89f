"""Run records (schema, versions) and run specs (every problem reported before any work)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import SCHEMA_VERSION, RunRecord, json_schema, read_record
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]


def _record(**kw) -> RunRecord:
    base = dict(status="complete", cell="rnd/nethack:score/seed0", spec={"method": "rnd", "task": "nethack:score", "seed": 0}, environment={},
                started_at="t0", updated_at="t1", budget=100, env_steps=120, wall_seconds=1.0,
                steps_per_second=120.0, metric="progression", final_metrics={"progression": 1.5})
    base.update(kw)
    return RunRecord(**base)


def test_record_round_trip(tmp_path):
    _record().write(tmp_path)
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["schema"] == "llmexplore.run" and data["schema_version"] == SCHEMA_VERSION
    assert read_record(tmp_path).final_metrics == {"progression": 1.5}


def test_newer_schema_and_garbage_are_refused(tmp_path):
    _record().write(tmp_path)
    data = json.loads((tmp_path / "run.json").read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="upgrade"):
        read_record(tmp_path)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        read_record(tmp_path)
    data["schema_version"] = SCHEMA_VERSION
    data["status"] = "exploded"
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="malformed"):
        read_record(tmp_path)


def test_a_version_2_record_reads_its_crafter_stats_as_family_stats(tmp_path):
    """Schema 3 renamed the family's stats file; the committed Crafter records (schema 2) still read, and
    are written back under the new name."""
    committed = REPO / "results/crafter-1m/records/none/crafter-reward/seed0/run.json"
    data = json.loads(committed.read_text())
    assert data["schema_version"] == 2 and data["files"]["crafter_stats"] == "stats.jsonl"
    record = read_record(committed)
    assert record.files.family_stats == "stats.jsonl" and record.files.checkpoints
    record.write(tmp_path)
    written = json.loads((tmp_path / "run.json").read_text())
    assert written["schema_version"] == SCHEMA_VERSION == 4
    assert written["files"]["family_stats"] == "stats.jsonl" and "crafter_stats" not in written["files"]
    assert read_record(tmp_path).files == record.files


def test_json_schema_names_the_fields():
    schema = json_schema()
    assert {"status", "spec", "curve", "final_metrics", "schema_version"} <= set(schema["properties"])


def test_schema_command_prints_run_and_evaluation_schemas(capsys):
    from llmexplore.cli import main

    assert main(["schema"]) == 0
    assert "final_metrics" in json.loads(capsys.readouterr().out)["properties"]
    assert main(["schema", "--evaluation"]) == 0
    evaluation = json.loads(capsys.readouterr().out)
    assert "final_metrics" not in evaluation["properties"] and "metrics" in evaluation["properties"]


def test_spec_defaults_come_from_task_and_method():
    resolved = resolve(RunSpec(method="rnd", task="nethack:oracle", steps=4096))
    assert resolved.ext_coef == 10.0 and resolved.int_coef == 0.5
    assert resolved.train.batch_size == 2048 and resolved.train.reward_scale == 0.1


def test_every_problem_is_reported_at_once():
    spec = RunSpec(method="rnnd", task="nethack:scor", steps=10)
    with pytest.raises(ConfigError) as err:
        resolve(spec)
    text = str(err.value)
    assert "unknown task 'nethack:scor'" in text
    assert "unknown method 'rnnd'" in text
    assert "smaller than one training batch" in text


def test_sync_batch_constraint_is_explained():
    spec = RunSpec(method="none", task="nethack:score", steps=100000, train={"envs_per_worker": 24, "batch_size": 1000})
    with pytest.raises(ConfigError, match="multiple of workers x envs_per_worker x rollout"):
        resolve(spec)


def test_unknown_spec_keys_are_refused():
    with pytest.raises(ConfigError, match="stepz"):
        RunSpec.parse({"method": "rnd", "task": "nethack:score", "stepz": 3})


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


BASE = ["--steps", "4096"]


@pytest.mark.parametrize("args,expected", [
    (["--method", "rnd", "--task", "nethack:nope", *BASE], "unknown task 'nethack:nope'"),
    (["--method", "curiosity", "--task", "nethack:score", *BASE], "unknown method 'curiosity'"),
    (["--method", "rnd", "--task", "nethack:score", "-o", "lr=-3", *BASE], "lr: Input should be greater than 0"),
    (["--method", "rnd", "--task", "nethack:score", "-o", "colour=red", *BASE], "colour: Extra inputs are not permitted"),
    (["--method", "rnd", "--task", "nethack:score", "--steps", "0"], "argument --steps: must be a positive whole number"),
    (["--method", "rnd", "--task", "nethack:score", "-t", "device=tpu", *BASE], "train.device"),
])
def test_cli_bad_input_stops_with_one_message(tmp_path, args, expected):
    out = tmp_path / "run"
    result = _cli("run", *args, "--out", str(out))
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_cli_unwritable_output_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        result = _cli("run", "--method", "none", "--task", "nethack:score", "--steps", "4096",
                      "--out", str(locked / "run"))
        assert result.returncode == 2
        assert "cannot write to output directory" in result.stderr
    finally:
        locked.chmod(0o700)


def test_cli_unwritable_output_directory_file_in_the_way(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = _cli("run", "--method", "none", "--task", "nethack:score", "--steps", "4096", "--out", str(blocker / "run"))
    assert result.returncode == 2
    assert "cannot write to output directory" in result.stderr


def test_cli_lists_tasks_and_methods():
    tasks = json.loads(_cli("envs", "--json").stdout)
    names = {t["task"] for t in tasks}
    assert {"nethack:score", "nethack:oracle-sober", "nethack:staircase-lvl4-continual", "crafter:reward-free"} <= names
    methods = json.loads(_cli("methods", "--json").stdout)
    assert {m["method"] for m in methods} >= {"none", "rnd"}


@pytest.mark.parametrize("train, rule", [
    ({"envs_per_worker": 20, "batch_size": 4096, "num_workers": 2, "serial": False,
      "sf_args": {"batched_sampling": True}}, "must divide one another; e.g. -t envs_per_worker=16"),
    ({"sf_args": {"with_vtrace": True}}, "with_vtrace needs sf_args.normalize_returns=false"),
    ({"envs_per_worker": 9, "sf_args": {"worker_num_splits": 2}}, "must be a multiple of sf_args.worker_num_splits"),
])
def test_sample_factory_rules_are_refused_before_start(train, rule):
    """What sample-factory 2.1.1 asserts on after start (batched sampling with 20 envs per worker, as on
    the GPU machine) is one clear error naming the rule and a fix, before any process starts."""
    from llmexplore.benchmarks.run.spec import RunSpec, resolve

    with pytest.raises(ConfigError, match=re.escape(rule)):
        resolve(RunSpec(method="none", task="nethack:score", seed=0, steps=100_000, train=train))
