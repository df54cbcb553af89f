"""Short ELLM trainings through the CLI on Crafter and Housekeep (slow: they train agents).

Beyond "it runs": the learner's per-episode intrinsic returns (read from the ``ellm_reward``
observation key of each next observation, reset observations included) must equal the
returns the actor-side wrapper summed for the same episodes, and the trained policy must
condition on the goal embedding.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from llmexplore.agents.checkpoints import latest_checkpoint, load_checkpoint_file
from llmexplore.benchmarks.run.record import read_record
from tests.conftest import SHARED_DATA
from tests.helpers.replay import check_evaluates_and_visualizes
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow
TRAIN = ["-t", "envs_per_worker=8", "-t", "batch_size=256"]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_run(out: Path, steps: int) -> list[dict]:
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= steps
    episodes = _jsonl(out / "episodes.jsonl")
    assert episodes and all({"ellm_return", "ellm_goals_achieved", "ellm_suggestions_per_step"} <= set(e)
                            for e in episodes)
    # the learner's accounting matches the wrapper's for every episode both saw
    learner = Counter(round(r["intrinsic_return"], 3) for r in _jsonl(out / "intrinsic.jsonl"))
    actor = Counter(round(e["ellm_return"], 3) for e in episodes)
    assert sum(learner.values()) >= len(episodes) - 8  # episodes ending in the last, untrained rollout
    assert not learner - actor, (learner, actor)
    model = load_checkpoint_file(latest_checkpoint(out))["model"]
    conditioning = [v for k, v in model.items() if "conditioning" in k and k.endswith("weight")]
    assert conditioning and conditioning[0].shape[1] == 384  # the goal embedding goes into the policy
    assert (out / "lm-cache.sqlite3").is_file()
    return episodes


def test_ellm_trains_on_reward_free_crafter(tmp_path):
    out, steps = tmp_path / "crafter", 2048
    result = run_cli("run", "--method", "ellm", "--task", "crafter:reward-free", "--steps", str(steps),
                     "--out", str(out), "--quiet", *TRAIN)
    assert result.returncode == 0, result.stderr[-3000:]
    episodes = _check_run(out, steps)
    assert sum(e["ellm_goals_achieved"] for e in episodes) > 0  # a near-random agent reaches some goals
    assert all(e["return"] == 0.0 for e in episodes)  # reward-free: c_ext = 0
    check_evaluates_and_visualizes(out, "ellm", tmp_path)


@pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")
def test_ellm_trains_on_housekeep(tmp_path):
    out, steps = tmp_path / "housekeep", 2048
    result = run_cli("run", "--method", "ellm", "--task", "housekeep:pomaria_2-reward-free", "--steps",
                     str(steps), "--out", str(out), "--quiet", "-o", "oracle_noise=0.1", *TRAIN)
    assert result.returncode == 0, result.stderr[-3000:]
    episodes = _check_run(out, steps)
    assert any(e["ellm_return"] != 0 for e in episodes)
    assert read_record(out).spec.method_options["oracle_noise"] == 0.1
    check_evaluates_and_visualizes(out, "ellm", tmp_path)


def test_ellm_refuses_nethack_and_ellm_bow_refuses_crafter_with_exit_2(tmp_path):
    for method, task, says in (("ellm", "nethack:score", "suggestion question only for crafter"),
                               ("ellm-bow", "crafter:reward", "needs observation keys ['message']")):
        result = run_cli("run", "--method", method, "--task", task, "--steps", "4096", "--out", str(tmp_path / method))
        assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_ellm_bow_trains_on_nethack(tmp_path):
    out = tmp_path / "bow"
    result = run_cli("run", "--method", "ellm-bow", "--task", "nethack:score", "--steps", "2048", "--out", str(out),
                     "--quiet", *TRAIN)
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.final_metrics["intrinsic_return"] > 0
    check_evaluates_and_visualizes(out, "ellm-bow", tmp_path)
