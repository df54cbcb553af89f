"""ELLM's grid files: pretraining cells without reward, fine-tuning cells that keep their method."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from tests.conftest import SHARED_DATA

REPO = Path(__file__).resolve().parents[2]


def test_the_crafter_grid_pretrains_reward_free_and_finetunes_each_method_on_the_reward_alone():
    grid = load_grid(REPO / "configs" / "ellm.yaml")
    parents = [c for c in grid.cells if c.parent_id is None]
    children = [c for c in grid.cells if c.parent_id]
    assert {c.spec.method for c in parents} == {"ellm", "none", "rnd"} and len(children) == len(parents) == 15
    assert all(c.spec.task == "crafter:reward-free" and c.spec.ext_coef == 0.0 and c.spec.steps == 5_000_000
               for c in parents)
    for child in children:
        parent = grid.cell(child.parent_id)
        assert child.spec.method == parent.spec.method and child.spec.int_coef == 0.0
        assert child.spec.task == "crafter:reward" and child.spec.ext_coef is None  # the task's c_ext (1)
        assert child.spec.lm.backend == "oracle"


@pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")
def test_the_housekeep_grid_keeps_the_lm_noise_when_finetuning():
    grid = load_grid(REPO / "configs" / "ellm-housekeep.yaml")
    noisy = [c for c in grid.cells if c.label.startswith("ellm-noise0.3")]
    assert len(noisy) == 6
    for cell in noisy:
        assert cell.spec.method == "ellm" and cell.spec.method_options == {"oracle_noise": 0.3}
    assert {c.spec.task for c in grid.cells} == {"housekeep:train-reward-free", "housekeep:train"}


def test_a_finetune_method_other_than_the_parents_starts_without_its_options(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("""
name: g
suite:
  protocol: pretrain-finetune
  tasks: [crafter:reward-free]
  steps: 8192
  finetune: {task: crafter:reward, steps: 4096, method: rnd, int_coef: 0.1}
set: {method: ellm, method_options: {threshold: 0.95}}
""")
    grid = load_grid(path)
    child = next(c for c in grid.cells if c.parent_id)
    assert child.spec.method == "rnd" and child.spec.method_options == {} and child.spec.int_coef == 0.1
