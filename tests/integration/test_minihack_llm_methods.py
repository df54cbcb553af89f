"""Motif and ONI on MiniHack for real (issue 53): through the CLI as a user runs them, with the embedded
oracle asked MiniHack's own goal (``minihack``), at the quickstart's cost (a few thousand env steps each).
Motif: collect -> annotate -> train the reward model -> RL, whose bonus varies; ONI-Retrieval: rewards a
non-zero share of steps. Neither run is inert."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from llmexplore.benchmarks.run.record import read_record
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.integration.test_one_cell import run_cli

pytest.importorskip("llmexplore.envs.minihack.compat", reason="needs pip install 'llmexplore[minihack]'")
pytestmark = pytest.mark.slow

TASK = "minihack:keyroom-s5"
KEY_TAKEN, WALL = "g - a key named The Master Key of Thievery.", "It's a wall."


def last_json(result) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def message_rewards(model_dir, messages: list[str]) -> np.ndarray:
    from llmexplore.methods.motif.artifacts import load_reward_model

    rows = np.zeros((len(messages), 256), dtype=np.uint8)
    for i, message in enumerate(messages):
        rows[i, : len(message)] = np.frombuffer(message.encode(), dtype=np.uint8)
    with torch.no_grad():
        return load_reward_model(model_dir).model(torch.from_numpy(rows)).reshape(-1).numpy()


def test_motif_runs_on_minihack_end_to_end_from_its_own_reward_model(tmp_path):
    data, model, run = tmp_path / "pairs", tmp_path / "reward_model", tmp_path / "run"
    collected = last_json(run_cli("motif", "collect", "--task", TASK, "--pairs", "3000", "--out", str(data),
                                  "--seed", "1"))
    assert collected["task"] == TASK and collected["pairs"] == 3000

    report = last_json(run_cli("motif", "annotate", "--dataset", str(data), "--goal", "minihack", "--quiet"))
    assert report["annotation"] == f"{ORACLE_ANNOTATOR}_msg_minihack_default"
    counts = report["counts"]
    assert counts["unknown"] == 0 and counts["first"] > 300 and counts["second"] > 300, counts

    manifest = last_json(run_cli("motif", "train-reward", "--dataset", str(data), "--annotation",
                                 report["annotation"], "--out", str(model), "--lr", "1e-3", "--epochs", "5"))
    assert manifest["final"]["val_accuracy"] >= 0.9
    taken, wall = message_rewards(model, [KEY_TAKEN, WALL])
    assert taken > wall  # the key that opens the way ranks above bumping into a wall

    result = last_json(run_cli("run", "--method", "motif", "--task", TASK, "--seed", "0", "--steps", "8192",
                               "-o", f"reward_model={model}", "--out", str(run), "--quiet"))
    assert result["status"] == "complete"
    record = read_record(run)
    assert record.env_steps >= 8192 and record.inert is None
    assert record.method_metrics["reward_int_max"] > record.method_metrics["reward_int_min"]
    returns = [json.loads(line)["intrinsic_return"] for line in (run / "intrinsic.jsonl").read_text().splitlines()]
    assert len(returns) >= 10 and np.std(returns) > 0  # the bonus is not constant across episodes


def test_oni_retrieval_on_minihack_rewards_a_share_of_steps(tmp_path):
    run = tmp_path / "oni"
    result = last_json(run_cli("run", "--method", "oni-retrieval", "--task", TASK, "--seed", "0", "--steps", "12288",
                               "-o", "goal=minihack", "--lm", "backend=oracle", "--out", str(run), "--quiet"))
    assert result["status"] == "complete"
    record = read_record(run)
    assert record.inert is None
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["oni_labels_total"] >= 5 and rows[-1]["oni_parse_failures"] == 0
    assert max(row["oni_rewarded_share"] for row in rows) > 0
