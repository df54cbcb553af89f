"""Motif end to end through the CLI, as a user runs it, on CPU at small scale:
collect -> annotate with the oracle (the LM layer's annotation job) -> train the reward
model -> RL with ``motif`` -> collect again with the trained agent's checkpoint."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from llmexplore.benchmarks.run.record import read_record
from llmexplore.methods.motif.artifacts import load_reward_model
from llmexplore.methods.motif.dataset import LABEL_FIRST, LABEL_SECOND, open_pair_dataset
from tests.helpers.motif import ORACLE_ANNOTATOR, label_with_oracle
from tests.helpers.replay import check_evaluates_and_visualizes
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow


def last_json(result) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def non_tie_accuracy_on(dataset, annotation: str, model_dir) -> tuple[float, int]:
    """How often the reward model ranks a pair as the labels do, over pairs with a strict preference."""
    ds = open_pair_dataset(dataset)
    labels = np.asarray(ds.labels(annotation))
    strict = np.flatnonzero((labels == LABEL_FIRST) | (labels == LABEL_SECOND))
    model = load_reward_model(model_dir).model
    with torch.no_grad():
        rewards = model(torch.from_numpy(np.asarray(ds.messages[strict]).reshape(-1, 256))).reshape(-1, 2)
    prefers_second = (rewards[:, 1] > rewards[:, 0]).numpy()
    prefers_first = (rewards[:, 0] > rewards[:, 1]).numpy()
    correct = np.where(labels[strict] == LABEL_SECOND, prefers_second, prefers_first)
    return float(correct.mean()), len(strict)


def test_motif_end_to_end_with_oracle_labels(tmp_path):
    data, model, run = tmp_path / "pairs", tmp_path / "reward_model", tmp_path / "run"
    collected = last_json(run_cli("motif", "collect", "--task", "nethack:score", "--pairs", "3000", "--out", str(data),
                                  "--seed", "1"))
    assert collected["pairs"] == 3000 and collected["policy"] == "random"

    report = last_json(run_cli("motif", "annotate", "--dataset", str(data), "--goal", "defaultgoal",
                               "--version", "default", "--quiet"))
    annotation = report["annotation"]
    assert annotation == f"{ORACLE_ANNOTATOR}_msg_defaultgoal_default"
    assert report["counts"]["unknown"] == 0 and report["counts"]["first"] > 300 and report["counts"]["second"] > 300
    assert (data / "lm-cache.sqlite3").is_file()  # the completion cache defaults to the dataset folder
    again = last_json(run_cli("motif", "annotate", "--dataset", str(data), "--goal", "defaultgoal", "--quiet"))
    assert again["already_labelled"] == 3000 and again["asked_pairs"] == 0  # resumes: nothing asked twice

    manifest = last_json(run_cli("motif", "train-reward", "--dataset", str(data), "--annotation", annotation,
                                 "--out", str(model), "--lr", "1e-3", "--batch-size", "256", "--epochs", "5"))
    with open(model / "metrics.csv") as fh:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    train_loss = [r["train_loss"] for r in rows]
    assert len(rows) == 5 and all(b < a for a, b in zip(train_loss, train_loss[1:])), train_loss
    assert rows[-1]["val_loss"] < rows[0]["val_loss"]
    # held-out pairs: the 20% validation split, and pairs from games the model never saw
    assert manifest["final"]["val_accuracy"] >= 0.9
    fresh = tmp_path / "fresh"
    last_json(run_cli("motif", "collect", "--pairs", "1000", "--out", str(fresh), "--seed", "7"))
    label_with_oracle(fresh)
    accuracy, strict = non_tie_accuracy_on(fresh, annotation, model)
    assert strict > 200 and accuracy >= 0.9, (accuracy, strict)

    result = last_json(run_cli("run", "--method", "motif", "--task", "nethack:score", "--seed", "0", "--steps", "8192",
                               "-o", f"reward_model={model}", "--out", str(run), "--quiet"))
    assert result["status"] == "complete"
    record = read_record(run)
    assert record.status == "complete" and record.env_steps >= 8192
    assert record.spec.int_coef == 0.1 and record.spec.ext_coef == 0.1
    assert record.spec.method_options["eps_quantile"] == 0.5 and record.spec.method_options["beta"] == 3.0
    assert "intrinsic_return" in record.final_metrics
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    shares = [m["motif_distinct_share"] for m in metrics if "motif_distinct_share" in m]
    assert shares and all(0 < s <= 1 for s in shares)
    assert any(m.get("reward_int_mean", 0) > 0 for m in metrics)
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert episodes and all("kills" in e and "gold" in e for e in episodes)
    check_evaluates_and_visualizes(run, "motif", tmp_path)

    # the trained agent collects the next dataset (through load_policy, with motif's env wrapper)
    agent_data = tmp_path / "agent_pairs"
    collected = last_json(run_cli("motif", "collect", "--policy", str(run), "--pairs", "300", "--envs", "4",
                                  "--out", str(agent_data)))
    assert collected["task"] == "nethack:score" and collected["pairs"] == 300
    meta = json.loads((agent_data / "collection.json").read_text())
    assert meta["policy"]["kind"] == "checkpoint" and meta["policy"]["method"] == "motif"
    assert meta["policy"]["env_steps"] >= 8192 and len(meta["policy"]["sha256"]) == 64
    ds = open_pair_dataset(agent_data, require=("message", "blstats", "tty_chars", "tty_colors"))
    assert ds.messages.shape == (300, 2, 256) and (ds.data["blstats"][..., 11] > 0).all()

    # errors stop before any work, exit 2, one message
    bad = run_cli("motif", "collect", "--policy", str(run), "--task", "nethack:score-extended", "--pairs", "10",
                  "--out", str(tmp_path / "bad-pairs"))
    assert bad.returncode == 2 and "Discrete(23)" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "bad-pairs").exists()
    bad = run_cli("run", "--method", "motif", "--task", "nethack:score", "--steps", "4096",
                  "-o", f"reward_model={tmp_path / 'nope'}", "--out", str(tmp_path / "bad"), "--quiet")
    assert bad.returncode == 2 and "does not exist" in bad.stderr and "Traceback" not in bad.stderr
