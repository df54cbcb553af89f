"""scripts/setup.sh refuses an unsupported Python within a second, naming the reason and the fix."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _python_313() -> str | None:
    """A Python 3.13 that runs (pyenv's shims may name one that the current pyenv version hides)."""
    for candidate in [*sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3"))),
                      *sorted(glob.glob("/root/.pyenv/versions/3.13*/bin/python3")), shutil.which("python3.13")]:
        if candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 13)"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


def test_python_3_13_is_refused_before_anything_is_installed(tmp_path):
    python = _python_313()
    if python is None:
        pytest.skip("no Python 3.13 on this machine")
    venv = tmp_path / "venv"
    result = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PYTHON": python, "LLMEXPLORE_VENV": str(venv)})
    assert result.returncode == 2
    assert "Python 3.10-3.12 (found 3.13)" in result.stderr and "numpy < 2" in result.stderr
    assert "PYTHON=python3.12" in result.stderr
    assert not venv.exists()


def test_a_missing_interpreter_is_refused_the_same_way(tmp_path):
    result = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PYTHON": str(tmp_path / "no-python"),
                                 "LLMEXPLORE_VENV": str(tmp_path / "venv")})
    assert result.returncode == 2 and "needs Python 3.10-3.12" in result.stderr


def test_python_3_12_names_the_build_tools_nle_needs(tmp_path):
    python = next(iter(sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3")))), None)
    if python is None:
        pytest.skip("no Python 3.12 on this machine")
    bin_dir = tmp_path / "bin"  # a PATH with bash and the basics, and no flex or bison
    bin_dir.mkdir()
    for tool in ("bash", "cc", "c++", "cmake", "env", "dirname"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    result = subprocess.run([str(bin_dir / "bash"), str(REPO / "scripts" / "setup.sh")], capture_output=True,
                            text=True, timeout=30,
                            env={"PATH": str(bin_dir), "PYTHON": python, "LLMEXPLORE_VENV": str(tmp_path / "venv"),
                                 "HOME": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    assert "flex bison" in result.stderr and "apt-get install build-essential cmake flex bison" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_python_3_12_check_skips_in_one_line_without_a_python_3_12(tmp_path):
    """CI's Python 3.12 step passes on a machine without one, and says why; nothing is cloned or installed."""
    if sys.version_info[:2] == (3, 12):
        pytest.skip("this interpreter is a Python 3.12: the check would run in full")
    bin_dir = tmp_path / "bin"  # a PATH with what the script needs before it looks, and no python3.12
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "tail"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    not_312 = bin_dir / "python3.11"  # an interpreter of another version, named as PYTHON312
    not_312.symlink_to(sys.executable)
    result = subprocess.run([str(bin_dir / "bash"), str(REPO / "scripts" / "fresh_clone_python312.sh")],
                            capture_output=True, text=True, timeout=30,
                            env={"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv"),
                                 "PYTHON312": str(not_312), "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "python 3.12 check: skipped, no Python 3.12 on this machine (set PYTHON312 to one)"
    assert list(tmp_path.glob("llmexplore-py312.*")) == []
