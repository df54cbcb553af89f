"""Motif and ONI on Crafter from a bare clone with the embedded oracle (issue 48), through the CLI as a user
runs them: 20k-step runs, the quickstart's cost class (about a minute each on a quiet 2-core machine)."""

from __future__ import annotations

import json

import pytest

from llmexplore.agents.checkpoints import CHECKPOINT_KEY, latest_checkpoint, load_checkpoint_file
from llmexplore.benchmarks.run.record import read_record
from llmexplore.lm.oracle import ORACLE_VERSION
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow
STEPS = "20000"


def last_json(result) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_trained_with_its_reward(run, prefix: str) -> list[dict]:
    """The record is complete at the budget, not inert, and the method paid a reward."""
    record = read_record(run)
    assert record.status == "complete" and record.env_steps >= int(STEPS)
    assert record.inert is None, record.inert
    assert "score" in record.final_metrics and "intrinsic_return" in record.final_metrics
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(m.get("reward_int_mean", 0) > 0 for m in metrics)
    assert any(m.get(f"{prefix}_rewarded_share", 0) > 0 for m in metrics)
    return metrics


def test_motif_on_crafter_collects_captions_annotates_trains_and_runs(tmp_path):
    data, model, run = tmp_path / "pairs", tmp_path / "reward_model", tmp_path / "run"
    collected = last_json(run_cli("motif", "collect", "--task", "crafter:reward-free", "--pairs", "1000",
                                  "--out", str(data), "--seed", "1"))
    assert collected["task"] == "crafter:reward-free" and collected["policy"] == "random"
    report = last_json(run_cli("motif", "annotate", "--dataset", str(data), "--quiet"))
    assert report["counts"]["unknown"] == 0 and min(report["counts"]["first"], report["counts"]["second"]) > 200
    manifest = last_json(run_cli("motif", "train-reward", "--dataset", str(data), "--annotation",
                                 report["annotation"], "--out", str(model), "--lr", "1e-3", "--batch-size", "64",
                                 "--epochs", "3"))
    assert manifest["final"]["val_accuracy"] >= 0.75

    last_json(run_cli("run", "--method", "motif", "--task", "crafter:reward-free", "--seed", "0", "--steps", STEPS,
                      "-o", f"reward_model={model}", "--out", str(run), "--quiet"))
    metrics = check_trained_with_its_reward(run, "motif")
    assert all(0 < m["motif_distinct_share"] <= 1 for m in metrics if "motif_distinct_share" in m)


def test_oni_retrieval_on_crafter_labels_captions_online(tmp_path):
    run = tmp_path / "run"
    last_json(run_cli("run", "--method", "oni-retrieval", "--task", "crafter:reward-free", "--seed", "0",
                      "--steps", STEPS, "--out", str(run), "--quiet"))
    metrics = check_trained_with_its_reward(run, "oni")
    assert read_record(run).environment["oracle_rules_version"] == ORACLE_VERSION  # the rules it was labelled by
    assert metrics[-1]["oni_labels_total"] > 100 and metrics[-1]["oni_backend_errors"] == 0
    state = load_checkpoint_file(latest_checkpoint(run))[CHECKPOINT_KEY]["method_state"]
    labels = dict((caption, label) for caption, label in state["service"]["labels"])
    assert all(caption.startswith("You ") for caption in labels)  # Crafter's captions, asked in Crafter's words
    assert set(labels.values()) == {0, 1}
    assert state["service"]["kind"].startswith("crafter_helpfulness/default")
