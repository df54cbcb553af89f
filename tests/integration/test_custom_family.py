"""A family declared only in the tests (``tests/fixtures/grid_world.py``) goes the whole way.

Registered with one call, it trains through the normal run path with ``none`` and ``rnd``,
appears in a leaderboard built by the ``leaderboard`` command with its metric normalised,
its extra column and its stats file, and the ``visualize`` command draws it with its own
screen. Nothing outside the fixture names it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmexplore.benchmarks.results.aggregate import normalization_notes
from llmexplore.benchmarks.run.budget import estimated_seconds
from llmexplore.benchmarks.run.cell import run_cell
from llmexplore.benchmarks.run.record import read_record
from llmexplore.benchmarks.run.spec import RunSpec
from llmexplore.cli import main
from llmexplore.envs import GYM_IDS, get_task, register_family, task_names, unregister_family
from llmexplore.envs.registry import FAMILIES_ENV
from llmexplore.errors import ConfigError
from tests.fixtures.grid_world import FAMILY, SIZE

REPO = Path(__file__).resolve().parents[2]
STEPS = 4_096


@pytest.fixture
def grid_family(monkeypatch):
    # the one call; the variable lets the processes a run spawns (sample-factory's env probe) register it too
    monkeypatch.setenv(FAMILIES_ENV, "tests.fixtures.grid_world:FAMILY")
    register_family(FAMILY)
    yield FAMILY
    unregister_family(FAMILY.name)


def test_reading_a_family_imports_neither_torch_nor_sample_factory():
    code = ("import sys, llmexplore.envs, tests.fixtures.grid_world; "
            "print([m for m in ('torch', 'sample_factory', 'nle', 'crafter') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_registering_adds_the_tasks_and_unregistering_removes_them(grid_family):
    assert "gridworld:corner" in task_names()
    assert GYM_IDS["gridworld:corner"] == "llmexplore/GridWorldCorner-v0"
    assert estimated_seconds(get_task("gridworld:corner"), 5_000) == 1.0
    register_family(FAMILY)  # the same family again changes nothing
    with pytest.raises(ValueError, match="already registered"):
        register_family(dataclasses.replace(FAMILY, title="Other"))
    unregister_family(FAMILY.name)
    assert "gridworld:corner" not in task_names() and "gridworld:corner" not in GYM_IDS
    register_family(FAMILY)


@pytest.mark.slow  # two short trainings: about a minute on 2 cores
def test_a_family_from_the_tests_trains_ranks_and_is_visualised(grid_family, tmp_path, capsys):
    runs = tmp_path / "runs"
    for method in ("none", "rnd"):
        data = {"method": method, "task": "gridworld:corner", "seed": 0, "steps": STEPS}
        spec = RunSpec.parse(data, "test")
        record = run_cell(spec, runs / method, quiet=True)
        assert record.status == "complete" and record.env_steps >= STEPS, record.error
        assert record.metric == "reached" and 0.0 <= record.final_metrics["reached"] <= 1.0
        assert record.spec.train["gamma"] == 0.95 and record.spec.train["batch_size"] == 256
        stats = [json.loads(line) for line in (runs / method / "grid_stats.jsonl").read_text().splitlines()]
        assert stats and set(stats[0]) == {"length", "reached"}
    rnd = read_record(runs / "rnd")
    assert rnd.final_metrics["intrinsic_return"] > 0  # RND read the family's novelty key

    board = tmp_path / "board"
    assert main(["leaderboard", str(runs), "--out", str(board), "--bootstrap", "200"]) == 0
    page = (board / "leaderboard.md").read_text()
    assert "## gridworld:corner" in page and " distance |" in page  # the family's extra column
    with (board / "scores.csv").open() as f:
        scores = list(csv.DictReader(f))
    assert [(r["task"], r["method"]) for r in scores] == [("gridworld:corner", m) for m in ("none", "rnd")]
    for row in scores:  # normalised by the family's points: 0 -> 0, 0.5 -> 1
        assert float(row["normalized"]) == pytest.approx(float(row["metric_value"]) / 0.5)
    assert "gridworld reached: half of the episodes reaching the corner -> 1" in normalization_notes()

    capsys.readouterr()
    out = tmp_path / "viz"
    assert main(["visualize", str(runs / "none"), "--episodes", "2", "--workers", "1", "--format", "gif",
                 "--out", str(out), "--quiet"]) == 0
    index = json.loads((out / "index.json").read_text())
    assert [e["seed"] for e in index["episodes"]] == [0, 1]
    from PIL import Image

    first = next(out.rglob("*.gif"))
    with Image.open(first) as gif:  # the family's own screen: 10-pixel cells
        assert gif.size[0] >= SIZE * 10


def run_cli(*args: str, families: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), **{FAMILIES_ENV: families})
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


def test_a_family_named_in_the_variable_is_listed_by_every_process():
    result = run_cli("envs", "--keys", "--json", families="tests.fixtures.grid_world:FAMILY")
    assert result.returncode == 0, result.stderr
    rows = {r["task"]: r for r in json.loads(result.stdout)}
    assert rows["gridworld:corner"]["obs_keys"] == ["grid", "position"]


def test_a_family_registered_by_a_call_only_is_refused_before_training(tmp_path):
    register_family(FAMILY)  # no LLMEXPLORE_FAMILIES: sample-factory's env probe would not know it
    try:
        data = {"method": "none", "task": "gridworld:corner", "seed": 0, "steps": STEPS}
        spec = RunSpec.parse(data, "test")
        with pytest.raises(ConfigError, match="registered in this process only") as info:
            run_cell(spec, tmp_path / "run", quiet=True)
    finally:
        unregister_family(FAMILY.name)
    assert FAMILIES_ENV in info.value.hint


def test_a_variable_naming_nothing_importable_is_one_clear_error():
    result = run_cli("envs", families="tests.fixtures.no_such_module:FAMILY")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "LLMEXPLORE_FAMILIES names 'tests.fixtures.no_such_module:FAMILY'" in result.stderr


@pytest.mark.parametrize("method", ["e3b", "noveld", "icm"])
def test_the_lm_free_baselines_reward_a_family_from_the_tests(grid_family, method):
    """E3B and ICM embed with the family's own network, NovelD counts its states: nothing names the family."""
    import torch

    from llmexplore.envs import make_adapter
    from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options

    task = get_task("gridworld:corner")
    env = make_adapter(task).make_env()
    obs, _ = env.reset(seed=0)
    frames, actions, dones = [obs], [], []
    for _ in range(12):
        actions.append(int(env.action_space.sample()))
        obs, _, terminated, truncated, _ = env.step(actions[-1])
        dones.append(float(terminated or truncated))
        if terminated or truncated:
            obs, _ = env.reset()
        frames.append(obs)
    batch = RewardBatch(obs={k: torch.as_tensor(np.stack([f[k] for f in frames]))[None] for k in frames[0]},
                        actions=torch.tensor(actions)[None], dones=torch.tensor(dones)[None])
    cls = get_method(method)
    instance = cls(parse_options(cls, {}), MethodContext(task=task, seed=0, run_dir=Path(".")),
                   make_adapter(task).observation_space())
    reward = instance.reward(batch)
    assert reward.shape == (1, 12) and torch.isfinite(reward).all() and float(reward.sum()) > 0
    assert instance.update(batch)
