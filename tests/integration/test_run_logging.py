"""A run's TensorBoard scalars (ours beside sample-factory's) and its W&B offline run (slow: trains)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import read_record
from llmexplore.benchmarks.run.tensorboard import summary_dir

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_tensorboard_and_wandb_offline(tmp_path):
    pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO), WANDB_MODE="offline", WANDB_SILENT="true")
    env.pop("WANDB_DIR", None)
    result = subprocess.run(
        [sys.executable, "-m", "llmexplore", "run", "--method", "rnd", "--task", "crafter:reward-free", "--seed", "0",
         "--steps", "4096", "-t", "envs_per_worker=8", "-t", "batch_size=512", "-t", "sf_args.with_wandb=true",
         "--out", str(out), "--quiet"], capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)

    events = EventAccumulator(str(summary_dir(out)))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    ours = {"llmexplore/intrinsic_reward_per_step", "llmexplore/intrinsic_return_per_episode", "benchmark/score",
            "method/rnd_loss"}
    assert ours <= tags, sorted(tags)
    assert any(t.startswith("perf/") or t.startswith("train/") for t in tags)  # sample-factory's, same folder
    steps = [e.step for e in events.Scalars("llmexplore/intrinsic_reward_per_step")]
    assert steps == sorted(steps) and 0 < steps[-1] <= record.env_steps  # env steps, not wall time
    assert events.Scalars("benchmark/score")[-1].step <= record.env_steps
    assert all(e.value > 0 for e in events.Scalars("llmexplore/intrinsic_return_per_episode"))

    runs = list((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb")), list((out / "wandb").iterdir())
    assert (out / "wandb-id.txt").read_text().strip() in runs[0].name
