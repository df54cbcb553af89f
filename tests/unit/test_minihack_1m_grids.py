"""The MiniHack 1M grids (issue 48): five rows on two tasks, five seeds, one sampling path and one critic layout
pinned, the bonuses as published, and Motif's grid waiting for its two reward models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.errors import ConfigError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TASKS = ("minihack:multiroom-n2", "minihack:keyroom-s5")


def test_the_minihack_1m_grids_hold_five_rows_of_five_seeds_on_two_tasks(tmp_path, monkeypatch):
    from llmexplore.methods.motif.artifacts import save_reward_model
    from llmexplore.methods.motif.model import MotifRewardModel

    monkeypatch.chdir(tmp_path)  # the reward models' paths are relative to where the grid runs
    cells = load_grid(CONFIGS / "minihack-1m.yaml", out_dir=tmp_path / "out").cells
    with pytest.raises(ConfigError, match="models/motif-minihack-multiroom-n2/minihack-default does not exist"):
        load_grid(CONFIGS / "minihack-1m-motif.yaml", out_dir=tmp_path / "out")
    for task in TASKS:
        model = tmp_path / "models" / f"motif-{task.replace(':', '-')}" / "minihack-default"
        model.mkdir(parents=True)
        save_reward_model(model, MotifRewardModel(), 0.0, 1.0, 2, 2, np.array([-1.0, 1.0]), {})
    cells += load_grid(CONFIGS / "minihack-1m-motif.yaml", out_dir=tmp_path / "out").cells
    rows = {(c.spec.label or c.spec.method, c.spec.task) for c in cells}
    assert rows == {(row, task) for row in ("none", "e3b-published", "noveld-published", "oni-retrieval", "motif")
                    for task in TASKS}
    for row, task in rows:
        seeds = sorted(c.spec.seed for c in cells if (c.spec.label or c.spec.method, c.spec.task) == (row, task))
        assert seeds == [0, 1, 2, 3, 4], (row, task)
    for cell in cells:
        assert cell.run.budget == 1_000_000
        assert cell.run.train.sampling == "batched" and cell.run.train.reward_streams == 1
        if cell.spec.method in ("e3b", "noveld"):
            assert cell.run.method_options["preset"] == "published"
