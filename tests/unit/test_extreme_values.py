"""Extreme values a user or a damaged file can hand us (issue 49, class 7): a return of 1e300 in a run record,
a 100 KB value in a grid file or an option, and a ``sf_args`` key sample-factory does not take. Each is
refused early with a short, clear message; nothing is printed as ``inf``, nothing echoes 100 KB."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.results.aggregate import collect
from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from llmexplore.benchmarks.results.statistics import MAX_MAGNITUDE, mean_and_se
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ECHO_LIMIT, ConfigError, shown
from llmexplore.option_input import merge_option_pairs, parse_option_pairs

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "results" / "crafter-1m" / "records" / "none" / "crafter-reward"
BIG = "q" * 100_000


def _runs_with_return(root: Path, value: float) -> None:
    """The three committed Crafter records, seed 2's final return replaced by ``value``."""
    for seed in range(3):
        shutil.copytree(RECORDS / f"seed{seed}", root / f"seed{seed}")
    path = root / "seed2" / "run.json"
    data = json.loads(path.read_text())
    data["final_metrics"]["return"] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("value", [1e300, -MAX_MAGNITUDE * 1.5])
def test_an_enormous_return_is_refused_and_no_leaderboard_prints_inf(tmp_path, value):
    """A return of 1e300 made the standard error overflow: the leaderboard printed '± inf'."""
    _runs_with_return(tmp_path / "runs", value)
    found = collect(tmp_path / "runs")
    assert sorted(r.path.name for r in found.runs) == ["seed0", "seed1"]
    assert f"beyond ±{MAX_MAGNITUDE:g}" in found.excluded[0]["why"]
    files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=100)
    for kind in ("markdown", "csv", "html"):
        text = files[kind].read_text().lower()
        assert "inf" not in text.replace("info", ""), kind


def test_the_largest_admitted_return_keeps_every_statistic_finite(tmp_path):
    _runs_with_return(tmp_path / "runs", -MAX_MAGNITUDE)
    assert len(collect(tmp_path / "runs").runs) == 3
    mean, se = mean_and_se([MAX_MAGNITUDE, -MAX_MAGNITUDE, MAX_MAGNITUDE])
    assert abs(mean) < MAX_MAGNITUDE and 0 < se < 2 * MAX_MAGNITUDE
    with pytest.raises(ValueError, match="within"):
        mean_and_se([1.0, 1e300])


def test_a_learning_curve_with_an_enormous_value_is_refused(tmp_path):
    shutil.copytree(RECORDS / "seed0", tmp_path / "seed0")
    path = tmp_path / "seed0" / "run.json"
    data = json.loads(path.read_text())
    data["curve"][1]["episode_return"] = 1e300
    path.write_text(json.dumps(data))
    found = collect(tmp_path)
    assert not found.runs and "learning curve's episode_return" in found.excluded[0]["why"]


GRID = {
    "name": "big", "suite": {"finetune": {"task": "crafter:reward", "reset": ["critic"]}},
    "defaults": {"train": {"batch_size": 1024, "envs_per_worker": 16, "preset": None}},
    "blocks": [{"set": {"method": "rnd", "task": "crafter:reward", "method_options": {"lr": 0.001}},
                "vary": {"seed": [0], "steps": [20000]}}],
}


def _with(path: tuple, big_key: bool = False) -> dict:
    """GRID with a 100 KB string as the value at ``path`` (or as the name of its last key)."""
    data = json.loads(json.dumps(GRID))
    *parents, last = path
    node = data
    for part in parents:
        node = node[part]
    if big_key:
        node[BIG] = node.pop(last)
    else:
        node[last] = [BIG] if last in ("reset", "steps") else BIG
    return data


@pytest.mark.parametrize("path, big_key", [
    (("blocks", 0, "set", "method"), False), (("blocks", 0, "set", "task"), False),
    (("blocks", 0, "vary", "steps"), False), (("name",), True), (("blocks", 0, "set"), True),
    (("blocks", 0, "set", "method_options", "lr"), True), (("defaults", "train", "preset"), False),
    (("defaults", "train", "batch_size"), True), (("suite", "finetune", "reset"), False),
])
def test_a_100kb_value_in_a_grid_file_is_echoed_short(tmp_path, path, big_key):
    data = _with(path, big_key)
    if path[-1] == "reset":
        data["suite"]["protocol"] = "pretrain-finetune"
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as caught:
        load_grid(tmp_path / "grid.yaml", tmp_path / "out")
    message = str(caught.value)
    assert "q" * 10 in message and "q" * (ECHO_LIMIT + 1) not in message, message[:500]
    assert len(message) < 1_000


def test_a_100kb_option_is_echoed_short():
    with pytest.raises(ConfigError) as caught:
        parse_option_pairs([BIG])
    assert len(str(caught.value)) < 200
    spec = RunSpec.parse({"method": "none", "task": "crafter:reward", "steps": 20000,
                          "train": merge_option_pairs({}, [f"preset={BIG}"])})
    with pytest.raises(ConfigError) as caught:
        resolve(spec, check_device=False)
    assert len(str(caught.value)) < 1_000 and "100,000 characters" in str(caught.value)


def test_shown_keeps_short_values_whole_and_cuts_long_ones():
    assert shown("abc") == "'abc'" and shown(3) == "3"
    assert shown(BIG).endswith("... (100,000 characters)") and len(shown(BIG)) < ECHO_LIMIT + 40
    assert len(shown([BIG] * 1000)) <= ECHO_LIMIT + 3


def test_grid_and_run_refuse_an_unknown_sf_args_key_alike(tmp_path):
    """``grid --dry-run`` accepted ``sf_args.max_grad_nrm`` that ``run -t`` refused when it built sample-factory's
    config: both now go through resolve's one check, with the close name."""
    data = json.loads(json.dumps(GRID))
    data["defaults"]["train"]["sf_args"] = {"max_grad_nrm": 1.0}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as from_grid:
        load_grid(tmp_path / "grid.yaml", tmp_path / "out")
    train = merge_option_pairs({}, ["sf_args.max_grad_nrm=1.0"])
    with pytest.raises(ConfigError) as from_run:
        resolve(RunSpec.parse({"method": "none", "task": "crafter:reward", "steps": 20000, "train": train}))
    for caught in (from_grid, from_run):
        assert "unknown sample-factory option in train.sf_args: 'max_grad_nrm'" in str(caught.value)
        assert "did you mean max_grad_norm?" in str(caught.value)
    known = merge_option_pairs({}, ["sf_args.max_grad_norm=1.0"])
    resolve(RunSpec.parse({"method": "none", "task": "crafter:reward", "steps": 20000, "train": known}))


@pytest.mark.parametrize("settings", [
    {"method": "rnd", "method_options": {"keys": [BIG]}},
    {"method": "noveld", "method_options": {"count_keys": [BIG]}},
    {"method": BIG}, {"task": BIG}, {"train": {"preset": BIG}}, {"train": {BIG: 1}}, {"steps": BIG},
    {"method": "rnd", "method_options": {BIG: 1}},
])
def test_a_100kb_run_setting_is_echoed_short(settings):
    """The checks behind ``llmexplore run`` (and every grid cell) repeat a short piece of a huge value."""
    values = {"method": "none", "task": "crafter:reward", "steps": 20000, **settings}
    with pytest.raises(ConfigError) as caught:
        resolve(RunSpec.parse(values), check_device=False)
    message = str(caught.value)
    assert "q" * 10 in message and "q" * (ECHO_LIMIT + 1) not in message, message[:300]
    assert len(message) < 3_000  # (an unknown task's hint lists every task: 2,267 characters)


@pytest.mark.parametrize("argv", [
    ["grid", str(REPO / "configs" / "quickstart.yaml"), "--dry-run", "-b", f"{BIG}=1"],
    ["grid", str(REPO / "configs" / "quickstart.yaml"), "--dry-run", "--backend", "slurm", "-b", f"{BIG}=1"],
    ["grid", f"/tmp/{BIG}"], ["leaderboard", f"/tmp/{BIG}"],
    ["run", "--method", "none", "--task", "crafter:reward", "--steps", "20000", "--out", f"/tmp/{BIG}"],
])
def test_a_100kb_command_line_value_is_echoed_short(argv, capsys):
    """Backend options, and paths too long to exist (the OS error names them), come back short."""
    from llmexplore.cli import main

    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "q" * 10 in error and len(error) < 1_000, error[:300]
