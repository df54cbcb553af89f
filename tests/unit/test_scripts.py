"""scripts/setup.sh and scripts/test.sh: what a new user sees before and while the tests run."""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import subprocess
import sys
from pathlib import Path

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


def _run(script: str, venv: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LLMEXPLORE_VENV": str(venv), "PYTHON": sys.executable}
    return subprocess.run([str(REPO / "scripts" / script), *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=REPO)


def _current_stamp() -> str:
    return f"{platform.python_version()} {hashlib.sha256((REPO / 'pyproject.toml').read_bytes()).hexdigest()}"


def test_setup_skips_pip_when_the_venv_was_installed_from_this_pyproject(tmp_path):
    result = _run("setup.sh", _set_up_venv(tmp_path, _current_stamp()))
    assert result.returncode == 0, result.stderr
    assert "is up to date with pyproject.toml (pip skipped" in result.stdout
    assert "pip" not in result.stderr


def test_the_test_script_prints_its_estimate_and_the_fast_subset_and_runs_named_paths_alone(tmp_path):
    venv = _set_up_venv(tmp_path, _current_stamp())
    result = _run("test.sh", venv, "--collect-only", "-q", "tests/unit/test_budget.py")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "~1,100 unit tests (2-10 minutes on 2 cores, two at a time" in result.stdout
    assert 'scripts/test.sh -m "not slow"' in result.stdout
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("tests/unit/test_budget.py::") for line in collected)
