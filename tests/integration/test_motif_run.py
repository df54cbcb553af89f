"""Motif through the CLI as a user runs it: collect, label (rule stand-in for the LM), train, run RL."""

from __future__ import annotations

import json

import pytest

from llmexplore.benchmarks.record import read_record
from llmexplore.methods.motif.dataset import open_pair_dataset
from tests.helpers.motif import RULE_ANNOTATION, label_with_rule
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow


def test_motif_collect_train_and_run_on_nethack_score(tmp_path):
    data, model, run = tmp_path / "pairs", tmp_path / "reward_model", tmp_path / "run"
    result = run_cli("motif", "collect", "--task", "nethack:score", "--pairs", "2000", "--out", str(data), "--seed", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["pairs"] == 2000
    label_with_rule(open_pair_dataset(data))
    result = run_cli("motif", "train-reward", "--dataset", str(data), "--annotation", RULE_ANNOTATION, "--out",
                     str(model), "--lr", "1e-3", "--batch-size", "256", "--epochs", "4")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["final"]["val_accuracy"] >= 0.9

    result = run_cli("run", "--method", "motif", "--task", "nethack:score", "--seed", "0", "--steps", "8192",
                     "-o", f"reward_model={model}", "--out", str(run), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(run)
    assert record.status == "complete" and record.env_steps >= 8192
    assert record.spec["int_coef"] == 0.1 and record.spec["ext_coef"] == 0.1
    assert record.spec["method_options"]["eps_quantile"] == 0.5 and record.spec["method_options"]["beta"] == 3.0
    assert "intrinsic_return" in record.final_metrics
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    shares = [m["motif_distinct_share"] for m in metrics if "motif_distinct_share" in m]
    assert shares and all(0 < s <= 1 for s in shares)
    assert any(m.get("reward_int_mean", 0) > 0 for m in metrics)

    # a missing reward model stops before any training, exit 2, one message
    bad = run_cli("run", "--method", "motif", "--task", "nethack:score", "--steps", "4096",
                  "-o", f"reward_model={tmp_path / 'nope'}", "--out", str(tmp_path / "bad"), "--quiet")
    assert bad.returncode == 2 and "does not exist" in bad.stderr and "Traceback" not in bad.stderr
