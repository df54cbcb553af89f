"""Evaluation pieces without a trained agent: seeds, records, chunked intrinsic rewards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmexplore.agents.policy import read_run_settings, resolve_checkpoint
from llmexplore.agents.rollout import EpisodeTrace, intrinsic_rewards
from llmexplore.benchmarks.evaluation.cli import choose_seeds, parse_seeds
from llmexplore.benchmarks.evaluation.run_eval import check_seeds
from llmexplore.benchmarks.evaluation.eval_record import EvaluationRecord, read_evaluation
from llmexplore.envs import get_task, make_adapter
from llmexplore.errors import ConfigError, DataError
from llmexplore.methods import MethodContext, get_method, parse_options


def test_seed_lists():
    assert parse_seeds(["0-3", "7,9", "12"]) == [0, 1, 2, 3, 7, 9, 12]
    assert choose_seeds(None, None) == list(range(10))
    assert choose_seeds(3, None) == [0, 1, 2]
    assert choose_seeds(2, ["5", "8"]) == [5, 8]
    with pytest.raises(ConfigError, match="disagrees"):
        choose_seeds(3, ["5", "8"])
    with pytest.raises(ConfigError, match="bad seed"):
        parse_seeds(["x"])
    with pytest.raises(ConfigError, match="at least 1"):
        choose_seeds(0, None)
    with pytest.raises(ConfigError, match="repeat"):
        check_seeds([1, 2, 1])
    with pytest.raises(ConfigError, match=">= 0"):
        check_seeds([-1])


def test_a_directory_that_is_not_a_run_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_run_settings(tmp_path / "missing")
    with pytest.raises(ConfigError, match="is not a trained run"):
        read_run_settings(tmp_path)
    with pytest.raises(ConfigError, match="no checkpoint.*expected at least one"):
        resolve_checkpoint(tmp_path, "latest")
    with pytest.raises(ConfigError, match="no 'best' checkpoint"):
        resolve_checkpoint(tmp_path, "best")
    with pytest.raises(ConfigError, match="not found"):
        resolve_checkpoint(tmp_path, "nope.pth")


def test_chunked_intrinsic_rewards_equal_one_pass():
    """Long episodes are scored in chunks; the chunks must not change any reward."""
    task = get_task("nethack:score")
    space = make_adapter(task).observation_space()
    cls = get_method("rnd")
    method = cls(parse_options(cls, {}), MethodContext(task=task, seed=0, run_dir=Path(".")), space)
    rng = np.random.default_rng(0)
    steps = 40
    trace = EpisodeTrace(
        seed=0, actions=rng.integers(0, 8, steps), rewards=np.zeros(steps),
        observations={
            "crop": rng.integers(32, 127, (steps + 1, 9, 9)).astype(np.uint8),
            "blstats": rng.integers(0, 30, (steps + 1, 27)).astype(np.float32),
            "message": np.zeros((steps + 1, 256), np.uint8),
        },
        extras={}, stats={}, terminated=True, truncated=False,
    )
    whole = intrinsic_rewards(method, trace, space, chunk=1024)
    pieces = intrinsic_rewards(method, trace, space, chunk=7)
    assert whole.shape == (steps,) and np.all(whole > 0)
    np.testing.assert_allclose(pieces, whole, rtol=1e-6)


def _record(**changes) -> dict:
    data = {
        "schema": "llmexplore.evaluation", "schema_version": 1, "run_dir": "/runs/a", "cell": "rnd/nethack:score/seed0",
        "method": "rnd", "task": "nethack:score", "run_seed": 0,
        "checkpoint": {"path": "sf/checkpoint_p0/c.pth", "kind": "latest", "env_steps": 10, "sha256": "ab"},
        "action_selection": "sample", "seed_offset": 1 << 40, "seeds": [0],
        "metric": "progression", "metrics": {"progression": 1.0},
        "episodes": [{"seed": 0, "env_seed": (1 << 40), "length": 3, "return": 1.0, "intrinsic_return": 0.5,
                      "terminated": True, "truncated": False, "stats": {"progression": 1.0}}],
        "environment": {}, "created_at": "2026-01-01T00:00:00+00:00",
        "timing": {"wall_seconds": 1.0, "workers": 1, "episodes_per_second": 1.0, "steps_per_second": 3.0},
    }
    data.update(changes)
    return data


def test_evaluation_record_round_trip_and_refusals(tmp_path: Path):
    path = tmp_path / "e.json"
    EvaluationRecord.model_validate(_record()).write(path)
    record = read_evaluation(path)
    assert record.episodes[0].episode_return == 1.0
    assert json.loads(path.read_text())["episodes"][0]["return"] == 1.0
    other = EvaluationRecord.model_validate(_record(created_at="2027-01-01T00:00:00+00:00"))
    assert other.results() == record.results()
    path.write_text(json.dumps(_record(schema_version=99)))
    with pytest.raises(DataError, match="schema 99"):
        read_evaluation(path)
    path.write_text(json.dumps(_record(schema="llmexplore.run")))
    with pytest.raises(DataError, match="not an llmexplore evaluation record"):
        read_evaluation(path)
    path.write_text(json.dumps(_record(action_selection="argmax")))
    with pytest.raises(DataError, match="malformed"):
        read_evaluation(path)
