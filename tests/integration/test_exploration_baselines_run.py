"""RND, ICM, E3B and NovelD train through the CLI as a user runs them, and a seed replays exactly (slow)."""

from __future__ import annotations

import pytest

from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("method", ["rnd", "icm", "e3b", "noveld"])
def test_the_method_update_beside_ppo_gives_the_results_of_the_sequential_order(method, tmp_path):
    """``-t update_thread`` (on by default) runs the method's training in a second thread during PPO's:
    three batches, each one's reward made by the networks the previous update trained, replay exactly
    with it off (so a seed also replays exactly). ICM trains on the graph its reward pass built in the
    learner's thread."""
    outs = {}
    for flag in ("false", "true"):
        outs[flag] = tmp_path / flag
        result = run_cli("run", "--method", method, "--task", "crafter:reward-free", "--seed", "1", "--steps", "3072",
                         "--out", str(outs[flag]), "-t", f"update_thread={flag}", "--quiet")
        assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(outs["true"])
    assert record.status == "complete" and record.env_steps >= 3072 and record.spec.train["update_thread"] is True
    assert record.spec.method_options  # the published defaults are written into the record
    hardware = record.environment["hardware"]  # what ran, provable from the record
    assert hardware["learner_device"] == hardware["inference_device"] == "cpu"
    assert hardware["cpus_usable"] >= 1 and hardware["workers"] == record.spec.train["num_workers"]
    for name in ("intrinsic.jsonl", "metrics.jsonl", "episodes.jsonl"):
        texts = [(outs[flag] / name).read_text() for flag in ("false", "true")]
        assert texts[0] and texts[0] == texts[1], name
    metrics = (outs["true"] / "metrics.jsonl").read_text()
    assert f'"{method}_' in metrics or '"rnd_loss"' in metrics
