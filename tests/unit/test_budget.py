"""Budgets: a published budget of days needs an explicit --steps; overshoot notes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llmexplore.benchmarks.run.budget import default_budget_or_error, overshoot_note
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task
from llmexplore.errors import ConfigError
from tests.conftest import REPO


def test_nethack_published_budget_needs_an_explicit_choice():
    task = get_task("nethack:score")
    with pytest.raises(ConfigError) as caught:
        default_budget_or_error(task)
    message = f"{caught.value} {caught.value.hint}"
    assert "2,000,000,000" in message and "--steps N" in message and "--steps published" in message


@pytest.mark.parametrize("written, steps", [("published", "published"), (" Published ", "published"),
                                            ("1e6", 1_000_000), ("20_000", 20_000), ("1,000,000", 1_000_000),
                                            (4096, 4096), (1e6, 1_000_000), (None, None)])
def test_a_spec_reads_a_budget_as_people_write_it(written, steps):
    assert RunSpec.parse({"method": "none", "task": "nethack:score", "steps": written}).steps == steps


@pytest.mark.parametrize("bad", ["0", "-5", "lots", "1.5", 0, -5, 1.5, float("nan"), float("inf"), "inf", True,
                                 "1e13", 10**13, [4096]])
def test_a_budget_that_is_no_whole_number_of_steps_is_refused_where_it_enters(bad):
    with pytest.raises(ConfigError) as caught:
        RunSpec.parse({"method": "none", "task": "nethack:score", "steps": bad}, "run options")
    assert caught.value.problems[0][0] == "steps"
    assert "positive whole number of env steps" in caught.value.problems[0][1]


def test_crafter_published_budget_fits_in_a_day():
    assert default_budget_or_error(get_task("crafter:reward")) == 1_000_000


def test_run_without_steps_on_nethack_stops_before_any_work(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "llmexplore", "run", "--method", "none", "--task", "nethack:score",
                             "--out", str(tmp_path / "run")], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2 and "published budget is 2,000,000,000" in result.stderr
    assert not (tmp_path / "run").exists()


def test_overshoot_note():
    assert overshoot_note(4096, 4096, 512) is None
    note = overshoot_note(4000, 4096, 512)
    assert note["env_steps"] == 96 and note["batch_size"] == 512 and "one batch" in note["why"]
    assert "batches" in overshoot_note(4000, 5120, 512)["why"]


def test_one_rule_for_run_and_grid_files_names_the_setting_where_it_is_set():
    from llmexplore.benchmarks.run.budget import GRID_STEPS, choose_steps

    task = get_task("nethack:score")
    assert choose_steps("published", task) == 2_000_000_000
    assert choose_steps("published", task, spelling=GRID_STEPS) == 2_000_000_000
    assert choose_steps(None, get_task("crafter:reward")) == 1_000_000
    with pytest.raises(ConfigError) as caught:
        resolve(RunSpec(method="none", task="nethack:score"), check_device=False, steps_spelling=GRID_STEPS)
    assert "no steps given" in str(caught.value) and "steps: published" in str(caught.value)
    assert "--steps" not in str(caught.value) and caught.value.problems[0][0] == "steps"
    with pytest.raises(ConfigError, match="--steps published"):  # `llmexplore run`'s spelling by default
        resolve(RunSpec(method="none", task="nethack:score"), check_device=False)
    # more rollout processes make the published budget shorter here: 24 x 1,300 env steps/s is under a day
    many = resolve(RunSpec(method="none", task="nethack:score", train={"num_workers": 24, "envs_per_worker": 2,
                                                                        "batch_size": 1024}), check_device=False)
    assert many.steps == 2_000_000_000
    # an unknown task is reported once, with no budget problem beside it
    with pytest.raises(ConfigError) as caught:
        resolve(RunSpec(method="none", task="no:such-task"), check_device=False)
    assert [field for field, _ in caught.value.problems] == ["task"]
