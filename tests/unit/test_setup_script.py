"""scripts/setup.sh refuses an unsupported Python within a second, naming the reason and the fix; CI's
fresh-clone check of another Python skips where there is none."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.pyenv_layout import unselected_pyenv_python

REPO = Path(__file__).resolve().parents[2]


def _python(version: str) -> str | None:
    """A Python of ``version`` that runs (pyenv's shims may name one that the current pyenv version hides)."""
    check = f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"
    for candidate in [*sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python3"))),
                      *sorted(glob.glob(f"/root/.pyenv/versions/{version}*/bin/python3")),
                      shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", check], capture_output=True).returncode == 0:
            return candidate
    return None


def test_a_python_older_than_3_10_is_refused_before_anything_is_installed(tmp_path):
    python = _python("3.9")
    if python is None:
        pytest.skip("no Python 3.9 on this machine")
    venv = tmp_path / "venv"
    result = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PYTHON": python, "LLMEXPLORE_VENV": str(venv)})
    assert result.returncode == 2
    assert "Python 3.10-3.13 (found 3.9)" in result.stderr and "PYTHON=python3.13" in result.stderr
    assert not venv.exists()


def test_a_missing_interpreter_is_refused_the_same_way(tmp_path):
    result = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PYTHON": str(tmp_path / "no-python"),
                                 "LLMEXPLORE_VENV": str(tmp_path / "venv")})
    assert result.returncode == 2 and "needs Python 3.10-3.13" in result.stderr


def test_the_fresh_clone_python_check_skips_in_one_line_without_that_python(tmp_path):
    """CI's Python 3.13 step passes on a machine without one, and says why; nothing is cloned or installed."""
    if sys.version_info[:2] == (3, 13):
        pytest.skip("this interpreter is a Python 3.13: the check would run in full")
    bin_dir = tmp_path / "bin"  # a PATH with what the script needs before it looks, and no python3.12
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "tail"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    other = bin_dir / "python3.11"  # an interpreter of another version, named as PYTHON_FOR_CHECK
    other.symlink_to(sys.executable)
    result = subprocess.run([str(bin_dir / "bash"), str(REPO / "scripts" / "fresh_clone_python.sh")],
                            capture_output=True, text=True, timeout=30,
                            env={"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv"),
                                 "PYTHON_FOR_CHECK": str(other), "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("python 3.13 check: skipped, no Python 3.13 on this machine "
                                     "(set PYTHON_FOR_CHECK to one)")
    assert list(tmp_path.glob("llmexplore-python.*")) == []


def test_a_constraints_file_that_is_not_there_is_refused_before_anything_is_installed(tmp_path):
    result = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PYTHON": sys.executable, "LLMEXPLORE_VENV": str(tmp_path / "venv"),
                                 "LLMEXPLORE_CONSTRAINTS": str(tmp_path / "no-such.txt")})
    assert result.returncode == 2 and "no-such.txt, which is not a file" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_the_previous_stack_constraints_hold_nle_1_0_and_numpy_1():
    lines = (REPO / "scripts" / "previous_stack_constraints.txt").read_text().splitlines()
    pins = {line for line in lines if line and not line.startswith("#")}
    assert {"nle==1.0.0", "gymnasium==0.29.1", "numpy<2"} <= pins


def test_find_python_skips_a_shim_that_does_not_run_and_takes_pyenvs_interpreter(tmp_path):
    """CI names Python 3.13 for the suite; on these machines `python3.13` on PATH is a pyenv shim that fails
    (3.13 is installed but not selected), so the interpreter under pyenv's versions folder is the one to use."""
    wanted, bin_dir, installed = unselected_pyenv_python(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv")}
    found = subprocess.run([str(REPO / "scripts" / "find_python.sh"), wanted], capture_output=True, text=True,
                           timeout=30, env=env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(installed)
    missing = subprocess.run([str(REPO / "scripts" / "find_python.sh"), "3.99"], capture_output=True, text=True,
                             timeout=30, env=env)
    assert missing.returncode == 1 and missing.stdout == ""
