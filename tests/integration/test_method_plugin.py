"""The example plugin package (examples/llmexplore-count-bonus) as a user would use it: installed with pip it
trains through its entry point; not installed, ``LLMEXPLORE_METHODS`` names it for every process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "llmexplore-count-bonus"
METHOD_PATH = "llmexplore_count_bonus.method:EpisodicCountBonus"
GRID_FAMILY = "tests.fixtures.grid_world:FAMILY"


def _llmexplore(*args: str, pythonpath: list[Path], timeout: int = 120, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("LLMEXPLORE_METHODS", "LLMEXPLORE_FAMILIES")}
    full_env.update(PYTHONPATH=os.pathsep.join(map(str, pythonpath)), HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True, env=full_env,
                          cwd=REPO, timeout=timeout)


def test_the_variable_registers_the_method_and_its_check_runs_before_training(tmp_path):
    listed = _llmexplore("methods", pythonpath=[REPO, EXAMPLE], LLMEXPLORE_METHODS=METHOD_PATH)
    assert listed.returncode == 0, listed.stderr
    assert "count-bonus" in listed.stdout and "count_key, exponent" in listed.stdout
    refused = _llmexplore("run", "--method", "count-bonus", "-o", "count_key=no_such_key", "--task", "gridworld:corner",
                          "--steps", "2048", "--out", str(tmp_path / "run"), pythonpath=[REPO, EXAMPLE],
                          LLMEXPLORE_METHODS=METHOD_PATH, LLMEXPLORE_FAMILIES=GRID_FAMILY)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "'no_such_key' is not an observation key of task 'gridworld:corner'" in refused.stderr


@pytest.mark.parametrize("value, why", [("no_such_module:X", "cannot be imported"),
                                        ("llmexplore.methods.base:MethodOptions", "not an IntrinsicReward subclass")])
def test_a_variable_naming_no_method_is_one_clear_error(value, why):
    result = _llmexplore("methods", pythonpath=[REPO], LLMEXPLORE_METHODS=value)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"LLMEXPLORE_METHODS names '{value}'" in result.stderr and why in result.stderr


@pytest.mark.slow  # pip install (a few seconds) and 2,048 training steps (about 30 s on 2 busy cores)
def test_the_installed_package_trains_through_its_entry_point(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(source)], capture_output=True, text=True,
                         timeout=300)
    assert pip.returncode == 0, pip.stderr
    assert "count-bonus = " + METHOD_PATH in next(target.glob("*.dist-info/entry_points.txt")).read_text()
    out = tmp_path / "run"
    result = _llmexplore("run", "--method", "count-bonus", "-o", "count_key=position", "--task", "gridworld:corner",
                         "--steps", "2048", "--out", str(out), "--quiet", pythonpath=[target, REPO], timeout=600,
                         LLMEXPLORE_FAMILIES=GRID_FAMILY)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "complete" and record["env_steps"] >= 2048
    assert record["spec"]["method"] == "count-bonus" and record["spec"]["int_coef"] == 0.1
    # every transition pays 1/sqrt(n) > 0, so an episode's intrinsic return is positive and at most its length
    assert 0 < record["final_metrics"]["intrinsic_return"] <= record["final_metrics"]["length"]
