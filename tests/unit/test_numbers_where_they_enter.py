"""Issue 37, class 4: every number a user gives is checked for being finite and in range where it
enters (command-line options, run specs, grid files), and grid files cannot make the checker hang
or run out of memory (cell cap, alias bombs, bad encodings): one clear error, exit code 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import MAX_CELLS, load_grid
from llmexplore.cli import main
from llmexplore.errors import ConfigError

RUN = ["run", "--method", "rnd", "--task", "crafter:reward-free"]


@pytest.mark.parametrize("args,message", [
    (RUN + ["--steps", "nan"], "argument --steps: must be a positive whole number"),
    (RUN + ["--steps", "inf"], "argument --steps: must be a positive whole number"),
    (RUN + ["--steps", "1e400"], "argument --steps: must be a positive whole number"),
    (RUN + ["--steps", "1e13"], "up to 1e+12"),
    (RUN + ["--steps", "4096", "--int-coef", "inf"], "argument --int-coef: must be a finite number"),
    (RUN + ["--steps", "4096", "--ext-coef", "nan"], "argument --ext-coef: must be a finite number"),
    (RUN + ["--steps", "4096", "--seed", str(2 ** 64)], "argument --seed: must be a whole number between 0 and"),
    (RUN + ["--steps", "4096", "-t", "learning_rate=.inf"], "train.learning_rate: Input should be a finite number"),
    (RUN + ["--steps", "4096", "--lm", "timeout_s=-1"], "lm.timeout_s"),
    (["leaderboard", ".", "--bootstrap", "0"], "argument --bootstrap: must be a whole number between 100"),
    (["leaderboard", ".", "--bootstrap", "-5"], "argument --bootstrap"),
    (["leaderboard", ".", "--bootstrap", "1000000000"], "argument --bootstrap"),
    (["data", "fetch", "crafter-stats", "--timeout", "-1"], "argument --timeout: must be a finite number above 0"),
    (["data", "fetch", "crafter-stats", "--timeout", "nan"], "argument --timeout"),
    (["lm", "serve", "--port", "-1"], "argument --port: must be a whole number between 0 and 65,535"),
    (["motif", "train-reward", "--dataset", "d", "--annotation", "a", "--out", "o", "--lr", "nan"], "argument --lr"),
])
def test_numbers_out_of_range_or_not_finite_exit_2_naming_the_option(tmp_path: Path, capsys, monkeypatch, args,
                                                                      message):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(args + (["--out", str(tmp_path / "run")] if args[0] == "run" else []))
    except SystemExit as exc:  # argparse's usage error
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err


def _grid(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize("steps", [".nan", ".inf", "1.0e+400", "-3", "10000000000000"])
def test_grid_budgets_must_be_finite_whole_and_in_range(tmp_path: Path, steps):
    path = _grid(tmp_path, f"name: g\nset: {{method: rnd, task: 'crafter:reward-free', steps: {steps}}}\n")
    with pytest.raises(ConfigError, match="steps"):
        load_grid(path, tmp_path / "out")


def test_a_huge_grid_is_refused_at_once_naming_the_cap_and_the_fix(tmp_path: Path):
    values = ", ".join(str(i) for i in range(100))
    path = _grid(tmp_path, f"name: huge\nset: {{method: rnd, task: 'crafter:reward-free', steps: 4096}}\n"
                           f"vary: {{seed: [{values}], int_coef: [{values}], ext_coef: [{values}]}}\n")
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        load_grid(path, tmp_path / "out")
    assert time.monotonic() - started < 5
    assert "1,000,000 cells" in str(err.value) and f"{MAX_CELLS:,}" in str(err.value)
    assert "split the grid" in str(err.value)


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path: Path, capsys):
    lines = ["name: bomb", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]  # 10**10 values
    lines.append("set: {method: rnd, task: 'crafter:reward-free', label: *a9}")
    path = _grid(tmp_path, "\n".join(lines) + "\n")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="more than 1,000,000 values once its aliases"):
        load_grid(path, tmp_path / "out")
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "run")]) == 2  # the same reader
    assert "more than 1,000,000 values" in capsys.readouterr().err
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("text,message", [
    (b"name: caf\xe9\nset: {method: rnd}\n", "grid.yaml:1: not UTF-8 text"),
    (b"name: r\nx: &a [1, *a]\n", "refers to a value that contains it"),
    (b"name: deep\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
])
def test_unreadable_grid_files_are_one_clear_error(tmp_path: Path, capsys, text, message):
    path = _grid(tmp_path, text)
    assert main(["grid", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
