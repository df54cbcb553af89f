"""E3B, NovelD and ICM train through the CLI as a user runs them, and a seed replays exactly (slow)."""

from __future__ import annotations

import pytest

from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("method", ["e3b", "noveld", "icm"])
def test_two_serial_runs_with_one_seed_give_identical_intrinsic_rewards(method, tmp_path):
    outs = []
    for copy in ("a", "b"):
        out = tmp_path / copy
        result = run_cli("run", "--method", method, "--task", "crafter:reward-free", "--seed", "3", "--steps", "2048",
                         "--out", str(out), "--quiet")
        assert result.returncode == 0, result.stderr[-3000:]
        outs.append(out)
    record = read_record(outs[0])
    assert record.status == "complete" and record.env_steps >= 2048
    assert record.spec.method_options  # the published defaults are written into the record
    hardware = record.environment["hardware"]  # what ran, provable from the record
    assert hardware["learner_device"] == hardware["inference_device"] == "cpu"
    assert hardware["cpus_usable"] >= 1 and hardware["workers"] == record.spec.train["num_workers"]
    intrinsic = [(out / "intrinsic.jsonl").read_text() for out in outs]
    assert intrinsic[0] and intrinsic[0] == intrinsic[1]
    metrics = [(out / "metrics.jsonl").read_text() for out in outs]
    assert f'"{method}_' in metrics[0] or '"rnd_loss"' in metrics[0]
    assert metrics[0] == metrics[1]


@pytest.mark.parametrize("method", ["rnd", "icm"])
def test_the_method_update_beside_ppo_gives_the_results_of_the_sequential_order(method, tmp_path):
    """``-t update_thread`` (on by default) runs the method's training in a second thread during PPO's:
    three batches, each one's reward made by the networks the previous update trained, replay exactly
    with it off. ICM trains on the graph its reward pass built in the learner's thread."""
    outs = {}
    for flag in ("false", "true"):
        outs[flag] = tmp_path / flag
        result = run_cli("run", "--method", method, "--task", "crafter:reward-free", "--seed", "1", "--steps", "3072",
                         "--out", str(outs[flag]), "-t", f"update_thread={flag}", "--quiet")
        assert result.returncode == 0, result.stderr[-3000:]
    assert read_record(outs["true"]).spec.train["update_thread"] is True
    for name in ("intrinsic.jsonl", "metrics.jsonl", "episodes.jsonl"):
        texts = [(outs[flag] / name).read_text() for flag in ("false", "true")]
        assert texts[0] and texts[0] == texts[1], name
