"""W&B offline keeps every TensorBoard scalar of a run (sample-factory's train/* and ours), at env steps.

Before, W&B read the event files through its TensorBoard sync, and what it kept depended on timing: a 4k-step
run kept only train/*, a 12k-step run nothing. Now each scalar is logged through wandb as it is written;
the offline run's record log is read back here and compared value by value with the event files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.tensorboard import summary_dir
from tests.helpers.wandb_offline import history_rows

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # two short trainings, about 40 s each on 2 busy cores


@pytest.mark.parametrize("steps", [4096, 12288])
def test_wandb_offline_keeps_every_tensorboard_scalar(tmp_path, steps):
    pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO), WANDB_MODE="offline", WANDB_SILENT="true", HF_HUB_OFFLINE="1",
               LLMEXPLORE_FAMILIES="tests.fixtures.grid_world:FAMILY")
    env.pop("WANDB_DIR", None)
    result = subprocess.run([sys.executable, "-m", "llmexplore", "run", "--method", "rnd", "--task", "gridworld:corner",
                             "--steps", str(steps), "-t", "wandb=true", "--out", str(out), "--quiet"],
                            capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    events = EventAccumulator(str(summary_dir(out)), size_guidance={"scalars": 0})
    events.Reload()
    tensorboard = {tag: sorted((e.step, e.value) for e in events.Scalars(tag)) for tag in events.Tags()["scalars"]}
    wandb: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for row in history_rows(next((out / "wandb").glob("offline-run-*"))):
        for key, value in row.items():
            if not key.startswith("_") and key != "env_steps":
                wandb[key].append((row["env_steps"], value))
    assert any(t.startswith("train/") for t in tensorboard) and "benchmark/reached" in tensorboard
    assert {"llmexplore/intrinsic_reward_per_step", "llmexplore/episode_return", "method/rnd_loss"} <= set(tensorboard)
    assert set(wandb) == set(tensorboard)
    for tag, points in tensorboard.items():
        logged = sorted(wandb[tag])
        assert [s for s, _ in logged] == [s for s, _ in points], tag
        assert [v for _, v in logged] == pytest.approx([v for _, v in points], rel=1e-5, abs=1e-6), tag
