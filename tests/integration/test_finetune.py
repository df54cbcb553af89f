"""Pretrain without reward, fine-tune with reward: the child starts from the parent's weights."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llmexplore.agents.checkpoints import latest_checkpoint, load_checkpoint_file
from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
TRAIN = ["-t", "envs_per_worker=8", "-t", "batch_size=256", "-t", "rollout=32"]


def run(*args: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "llmexplore", "run", *args, *TRAIN, "--quiet"],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def model(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint_file(latest_checkpoint(run_dir))["model"]


def test_finetuning_from_a_reward_free_parent_loads_its_weights(tmp_path):
    parent, child, fresh = tmp_path / "parent", tmp_path / "child", tmp_path / "fresh"
    run("--method", "rnd", "--task", "crafter:reward-free", "--steps", "1024", "--out", str(parent))
    assert read_record(parent).spec.ext_coef == 0.0
    # a learning rate this small leaves the weights where they started; the children use another
    # seed than the parent, so only loading can make their weights equal the parent's
    run("--method", "none", "--task", "crafter:reward", "--steps", "512", "--seed", "1", "--out", str(child),
        "--parent", str(parent), "--reset", "critic", "-t", "learning_rate=1e-12")
    run("--method", "none", "--task", "crafter:reward", "--steps", "512", "--seed", "1", "--out", str(fresh),
        "-t", "learning_rate=1e-12")

    p, c, f = model(parent), model(child), model(fresh)
    encoder = [k for k in p if k.startswith("encoder.") and p[k].dtype.is_floating_point]
    assert encoder
    for key in encoder:
        assert torch.allclose(c[key], p[key], atol=1e-6), key
    assert any(not torch.allclose(f[key], p[key], atol=1e-3) for key in encoder)
    critic = [k for k in p if k.startswith("critic_linear.") and k.endswith("weight")]
    assert critic and all(not torch.allclose(c[k], p[k], atol=1e-3) for k in critic)  # re-initialised

    record = read_record(child)
    assert record.parent["run_dir"] == str(parent)
    assert record.parent["reset"] == ["critic"]
    assert set(encoder) <= set(record.parent["loaded"])
