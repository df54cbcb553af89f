"""``-t preset=published`` on Crafter trains the scoreboard's PPO through the CLI (slow: trains an agent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_the_published_preset_trains_with_many_optimiser_steps_per_update(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "llmexplore", "run", "--method", "none", "--task", "crafter:reward",
         "--steps", "4096", "-t", "preset=published", "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "complete"

    train = json.loads((out / "run.json").read_text())["spec"]["train"]  # the record: resolved settings
    assert train["preset"] == "published"
    assert (train["network"], train["batch_size"], train["rollout"], train["learning_rate"]) == (
        "published", 2048, 64, 3e-4)
    assert train["sf_args"]["num_epochs"] == 10 and train["sf_args"]["use_rnn"] is False

    checkpoint = sorted((out / "sf").rglob("checkpoint_*.pth"))[-1]
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    updates = state["env_steps"] // 2048
    assert state["env_steps"] >= 4096 and updates >= 2
    assert state["train_step"] == updates * 10 * 32  # 10 epochs of 32 minibatches per update, not 1
    assert sum(v.numel() for k, v in state["model"].items() if k.startswith("encoder.")) == 600_736
