"""``-t network=published`` trains through the CLI on a CPU (slow: it trains an agent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmexplore.envs.nethack.nle_baseline import upstream_parameter_count

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_published_network_trains_on_cpu_and_has_the_released_parameter_count(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "llmexplore", "run", "--method", "none", "--task", "nethack:score",
         "-t", "network=published", "-t", "envs_per_worker=4", "-t", "batch_size=128", "--steps", "256",
         "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "complete"
    checkpoint = sorted((out / "sf").rglob("checkpoint_*.pth"))[-1]
    weights = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]
    encoder = sum(v.numel() for k, v in weights.items() if k.startswith("encoder."))
    assert encoder == upstream_parameter_count(blstats=27)
    assert weights["encoder.glyph_embedding.weight"].shape == (5976, 128)
