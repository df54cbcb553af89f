"""scripts/setup.sh and scripts/test.sh: what a new user sees before and while the tests run."""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import subprocess
import sys
from pathlib import Path

from tests.helpers.pyenv_layout import unselected_pyenv_python

REPO = Path(__file__).resolve().parents[2]


def _set_up_venv(tmp_path: Path, stamp: str | None) -> Path:
    """A stand-in for .venv: its python is this interpreter (so llmexplore imports), its stamp as given."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    # pip is refused: a test must never install into the interpreter it borrows
    python.write_text(f"#!/bin/sh\n[ \"$1 $2\" = \"-m pip\" ] && {{ echo 'pip refused here' >&2; exit 97; }}\n"
                      f"exec {sys.executable} \"$@\"\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    (venv / "bin" / "activate").write_text(f'export PATH="{venv / "bin"}:$PATH"\n')
    if stamp is not None:
        (venv / ".llmexplore-setup").write_text(stamp + "\n")
    return venv


def _run(script: str, venv: Path, *args: str, constraints: str | None = None) -> subprocess.CompletedProcess:
    """Runs a script with the caller's environment, less a constraints file the caller's own set-up used
    (CI sets LLMEXPLORE_CONSTRAINTS for the suite), so that the stamp the script expects is the one given."""
    env = {k: v for k, v in os.environ.items() if k != "LLMEXPLORE_CONSTRAINTS"}
    env.update({"LLMEXPLORE_VENV": str(venv), "PYTHON": sys.executable})
    if constraints is not None:
        env["LLMEXPLORE_CONSTRAINTS"] = constraints
    return subprocess.run([str(REPO / "scripts" / script), *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=REPO)


def _current_stamp(constraints: str | None = None) -> str:
    stamp = f"{platform.python_version()} {hashlib.sha256((REPO / 'pyproject.toml').read_bytes()).hexdigest()}"
    if constraints is not None:
        stamp += " " + hashlib.sha256((REPO / constraints).read_bytes()).hexdigest()
    return stamp


def test_setup_skips_pip_when_the_venv_was_installed_from_this_pyproject(tmp_path):
    result = _run("setup.sh", _set_up_venv(tmp_path, _current_stamp()))
    assert result.returncode == 0, result.stderr
    assert "is up to date with pyproject.toml (pip skipped" in result.stdout
    assert "pip" not in result.stderr


def test_setup_with_a_constraints_file_skips_pip_only_for_a_venv_installed_with_that_file(tmp_path):
    constraints = "scripts/previous_stack_constraints.txt"
    same = _run("setup.sh", _set_up_venv(tmp_path / "same", _current_stamp(constraints)), constraints=constraints)
    assert same.returncode == 0, same.stderr
    assert "pip skipped" in same.stdout
    # a venv installed without the constraints is not up to date with them: setup reinstalls (refused here)
    other = _run("setup.sh", _set_up_venv(tmp_path / "other", _current_stamp()), constraints=constraints)
    assert other.returncode == 97 and "pip refused here" in other.stderr


def test_the_test_script_prints_its_estimate_and_the_fast_subset_and_runs_named_paths_alone(tmp_path):
    venv = _set_up_venv(tmp_path, _current_stamp())
    result = _run("test.sh", venv, "--collect-only", "-q", "tests/unit/test_budget.py")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "~1,100 unit tests (2-10 minutes on 2 cores, two at a time" in result.stdout
    assert 'scripts/test.sh -m "not slow"' in result.stdout
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("tests/unit/test_budget.py::") for line in collected)


def test_setup_takes_pyenvs_interpreter_when_the_named_one_is_a_shim_that_does_not_run(tmp_path):
    """README: `PYTHON=python3.13 scripts/setup.sh`. Where python3.13 is a pyenv shim of a version installed
    but not selected, it fails; setup uses the interpreter under pyenv's versions folder instead."""
    wanted, bin_dir, installed = unselected_pyenv_python(tmp_path)
    venv = _set_up_venv(tmp_path, _current_stamp())
    env = {k: v for k, v in os.environ.items() if k != "LLMEXPLORE_CONSTRAINTS"}
    env.update({"LLMEXPLORE_VENV": str(venv), "PYTHON": f"python{wanted}", "PYENV_ROOT": str(tmp_path / "pyenv"),
                "PATH": f"{bin_dir}:{env['PATH']}"})
    result = subprocess.run([str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, env=env,
                            timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert f"python{wanted} does not run here" in result.stdout and str(installed) in result.stdout
    assert "pip skipped" in result.stdout
