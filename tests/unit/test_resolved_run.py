"""A run is resolved once: the cell writes the resolved run to its folder, and the engine and the method read
that object as is; a folder holding another run is refused, an older folder (a record, no resolved run) is
adopted."""

from __future__ import annotations

import json

import pytest

from llmexplore.agents.resolved_run import RESOLVED_FILE, ResolvedRun
from llmexplore.agents.run_settings import RunSettings
from llmexplore.benchmarks.run.folder import adopt_folder
from llmexplore.benchmarks.run.record import RunRecord
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError


def _run(**changes) -> ResolvedRun:
    values = dict(method="rnd", task="crafter:reward-free", seed=2, steps=4096, method_options={"lr": 0.001})
    values.update(changes)
    return resolve(RunSpec(**values))


def _old_record(spec: dict) -> RunRecord:
    return RunRecord(status="interrupted", cell="rnd/crafter:reward-free/seed2", spec=spec, environment={},
                     started_at="t0", updated_at="t1", budget=4096, env_steps=1024, wall_seconds=1.0,
                     steps_per_second=1.0, metric="score")


def test_every_default_is_filled_in_once():
    run = _run()
    assert run.steps == 4096 and run.label == "rnd" and run.int_coef == 0.5 and run.ext_coef == 0.0
    assert run.method_options["lr"] == 0.001 and run.method_options["feature_dim"] == 128  # defaults included
    assert run.train.batch_size == 1024 and run.train.serial is True and run.train.torch_threads is not None
    assert run.encoder == "crafter" and run.policy_keys == ()
    assert set(run.spec_dict()) == set(RunSpec.model_fields)  # the record's spec: every value final


def test_the_folder_gets_the_resolved_run_and_a_resumption_must_match_it(tmp_path):
    run = _run()
    assert adopt_folder(tmp_path, run) is None
    assert ResolvedRun.read(tmp_path) == run
    assert json.loads((tmp_path / RESOLVED_FILE).read_text())["train"]["batch_size"] == 1024
    # the same run again, and one that only trains with more workers, are this run
    adopt_folder(tmp_path, run)
    more_workers = _run(train={"num_workers": 2})
    adopt_folder(tmp_path, more_workers)
    assert ResolvedRun.read(tmp_path) == more_workers
    with pytest.raises(ConfigError, match=r"different run \(method_options.lr: 0.001 before, 0.01 now"):
        adopt_folder(tmp_path, _run(method_options={"lr": 0.01}))
    assert ResolvedRun.read(tmp_path) == more_workers  # nothing written for the refused run


def test_an_option_added_later_resumes_at_its_default_and_is_refused_otherwise(tmp_path):
    """A folder written before a method gained an option (here RND's ``language``, added with the
    language-novelty baseline) lacks the key; left at its default, the option keeps the earlier
    behaviour, so the run resumes; set otherwise, it is another run."""
    run = _run()
    adopt_folder(tmp_path, run)
    stored = json.loads((tmp_path / RESOLVED_FILE).read_text())
    del stored["digest"]  # as the older version wrote it: no digest either
    for key in ("language", "language_weight"):
        del stored["method_options"][key]
    (tmp_path / RESOLVED_FILE).write_text(json.dumps(stored))
    with pytest.raises(ConfigError, match=r"method_options.language: False before, True now"):
        adopt_folder(tmp_path, _run(method_options={"lr": 0.001, "language": True}))
    adopt_folder(tmp_path, run)
    assert ResolvedRun.read(tmp_path) == run  # the folder now names the option


def test_a_folder_from_before_the_update_thread_resumes_with_it_on_or_off(tmp_path):
    """``train.update_thread`` changes how long a batch takes, never what it computes: a folder written
    before the setting existed lacks the key and resumes either way."""
    run = _run()
    adopt_folder(tmp_path, run)
    stored = json.loads((tmp_path / RESOLVED_FILE).read_text())
    del stored["digest"], stored["train"]["update_thread"]  # as the older version wrote it
    (tmp_path / RESOLVED_FILE).write_text(json.dumps(stored))
    assert ResolvedRun.read(tmp_path).train.update_thread is True
    in_order = _run(train={"update_thread": False})
    adopt_folder(tmp_path, in_order)
    assert ResolvedRun.read(tmp_path) == in_order
    adopt_folder(tmp_path, run)


def test_a_folder_of_an_older_version_is_checked_against_its_record_and_adopted(tmp_path):
    run = _run()
    _old_record(run.spec_dict()).write(tmp_path)
    assert adopt_folder(tmp_path, run).status == "interrupted"
    assert ResolvedRun.read(tmp_path) == run
    other = tmp_path / "other"
    _old_record({**run.spec_dict(), "seed": 5}).write(other)
    with pytest.raises(ConfigError, match="seed: 5 before, 2 now"):
        adopt_folder(other, run)
    assert not (other / RESOLVED_FILE).exists()


def test_a_damaged_resolved_file_is_named(tmp_path):
    (tmp_path / RESOLVED_FILE).write_text('{"method": "rnd"}')
    with pytest.raises(ConfigError, match=f"{RESOLVED_FILE} is not a resolved run"):
        ResolvedRun.read(tmp_path)


def test_the_engine_and_the_method_read_the_resolved_run_as_is(tmp_path):
    from llmexplore.agents.training import build_sf_config

    run = _run(lm={"backend": "oracle"})
    cfg = build_sf_config(run, tmp_path)
    assert cfg.llmexplore["run"] == json.loads(run.model_dump_json())  # what resolved.json holds
    assert cfg.batch_size == run.train.batch_size and cfg.train_for_env_steps == run.budget  # a backstop (training_budget.py)
    again = RunSettings.from_cfg(cfg)  # as each sample-factory process does
    assert again.run == run and again.run_dir == str(tmp_path)
    cls, options = again.method_class_and_options()
    assert cls.name == "rnd" and options.model_dump() == run.method_options
    context = again.method_context()
    assert context.lm == run.lm and context.run == run and context.seed == 2 and context.task.name == run.task


def test_run_with_only_its_folder_resumes_the_run_the_folder_holds(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    run = _run()
    adopt_folder(tmp_path, run)
    _old_record(run.spec_dict()).model_copy(update={"status": "complete", "env_steps": 4096}).write(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "llmexplore", "run", "--out", str(tmp_path), "--quiet"],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["status"] == "complete"  # found complete: nothing trained
    empty = subprocess.run([sys.executable, "-m", "llmexplore", "run", "--out", str(tmp_path / "new")],
                           capture_output=True, text=True, timeout=300, env=env)
    assert empty.returncode == 2 and "missing --method and --task" in empty.stderr


def test_a_policy_folder_is_read_from_its_resolved_run_and_an_older_one_from_its_record(tmp_path):
    """Evaluation reads the run folder's resolved run; a folder trained before resolved runs existed has
    sample-factory's flat settings and a record whose spec holds every resolved value."""
    from llmexplore.agents.policy import read_run_settings

    run = _run()
    (tmp_path / "sf").mkdir()
    old_settings = {"task": run.task, "method": run.method, "seed": run.seed, "run_dir": "/gone", "ext_coef": 0.0,
                    "int_coef": 0.5, "method_options": run.method_options, "device": "cpu", "lm": {},
                    "encoder": "crafter", "policy_keys": [], "budget": 4096}
    (tmp_path / "sf" / "config.json").write_text(json.dumps({"llmexplore": old_settings}))
    _old_record(run.spec_dict()).write(tmp_path)
    settings = read_run_settings(tmp_path)
    assert settings.run == run and settings.run_dir == str(tmp_path.resolve()) and settings.device == "cpu"
    moved = run.model_copy(update={"seed": 9})
    moved.write(tmp_path)  # the folder's resolved run comes first
    assert read_run_settings(tmp_path).run == moved


def test_later_option_defaults_leave_required_options_to_the_folder():
    """A method with required options (MaestroMotif: its reward models and code) has no default to fill
    in for them; the folder's own values stand, and only the options with defaults are added."""
    from types import SimpleNamespace

    from llmexplore.benchmarks.run.folder import _with_later_option_defaults
    from llmexplore.methods import get_method

    fields = get_method("maestro").Options.model_fields
    required = {key for key, field in fields.items() if field.is_required()}
    assert required  # the case this test is about
    stored = {"method": "maestro", "method_options": {key: f"kept-{key}" for key in required}}
    filled = _with_later_option_defaults(stored, SimpleNamespace(method="maestro"))["method_options"]
    assert set(filled) == set(fields)
    assert all(filled[key] == f"kept-{key}" for key in required)


def test_a_larger_budget_extends_the_run_and_a_smaller_one_is_refused(tmp_path, capsys):
    """Continuing a run to a larger budget is the same run (issue 52); a smaller budget would leave
    checkpoints and episodes past it, so it is refused, naming both budgets."""
    from llmexplore.benchmarks.run.folder import is_complete

    adopt_folder(tmp_path, _run(steps=4096))
    adopt_folder(tmp_path, _run(steps=8192))
    assert "extending" in capsys.readouterr().err and ResolvedRun.read(tmp_path).steps == 8192
    with pytest.raises(ConfigError, match="budget of 8,192 env steps; 4,096 is smaller"):
        adopt_folder(tmp_path, _run(steps=4096))
    with pytest.raises(ConfigError, match="holds a different run"):  # anything else still makes another run
        adopt_folder(tmp_path, _run(steps=16384, seed=3))
    done = _old_record(_run().spec_dict()).model_copy(update={"status": "complete", "budget": 4096})
    assert is_complete(done, 4096) and not is_complete(done, 8192) and not is_complete(None, 1)
