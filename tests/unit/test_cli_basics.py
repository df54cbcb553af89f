"""The command line: --version, defaults in --help, whole rows when piped, light start-up, dotted options."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llmexplore import __version__
from llmexplore.option_input import merge_option_pairs
from tests.conftest import REPO


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_version():
    result = _cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"llmexplore {__version__}"


def test_help_shows_defaults():
    result = _cli("leaderboard", "--help")
    assert result.returncode == 0
    assert "(default: 2000)" in " ".join(result.stdout.split())


def test_piped_tables_keep_whole_rows():
    result = _cli("envs")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [li for li in result.stdout.splitlines() if li.startswith("| crafter:reward-free ")]
    assert lines, result.stdout[:2000]
    line = lines[0]
    assert "llmexplore/CrafterRewardFree-v0" in line and "Crafter without reward (exploration/pretraining protocol)" in line
    assert max(len(li) for li in result.stdout.splitlines()) > 80


@pytest.mark.parametrize("argv,heavy", [
    (["--help"], ("torch", "sample_factory", "pandas", "matplotlib", "pydantic", "importlib.metadata")),
    (["schema"], ("torch", "sample_factory", "pandas", "matplotlib")),
    (["leaderboard", "--help"], ("torch", "sample_factory", "pandas", "matplotlib")),
    (["run", "--help"], ("torch", "sample_factory", "pandas", "matplotlib")),
    # listings and checking a grid read names, options and checks: no RL engine, no simulator
    (["envs"], ("torch", "sample_factory", "nle", "crafter")),
    (["methods"], ("torch", "sample_factory", "nle", "crafter")),
    (["grid", str(REPO / "configs" / "quickstart.yaml"), "--dry-run"], ("torch", "sample_factory")),
])
def test_light_commands_import_no_heavy_modules(argv, heavy):
    """Start-up stays short: these commands never import torch, sample-factory or pandas."""
    code = ("import sys, io, contextlib\nfrom llmexplore.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    try: main({argv!r})\n    except SystemExit: pass\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_dotted_options_set_nested_values():
    merged = merge_option_pairs({"sf_args": {"a": 1}, "batch_size": 64}, ["sf_args.with_wandb=true", "rollout=16"])
    assert merged == {"sf_args": {"a": 1, "with_wandb": True}, "batch_size": 64, "rollout": 16}
