"""configs/oni.yaml holds ONI's published NetHack settings."""

from __future__ import annotations

from pathlib import Path

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.run.spec import resolve

REPO = Path(__file__).resolve().parents[2]
ONI = {"oni-retrieval", "oni-classification", "oni-ranking"}
TASKS = {"nethack:score-extended", "nethack:oracle-extended", "nethack:staircase-lvl3-extended",
         "nethack:staircase-lvl4-extended"}


def test_oni_grid_has_the_published_tasks_and_coefficients(tmp_path):
    grid = load_grid(REPO / "configs" / "oni.yaml", tmp_path)
    cells = [resolve(c.spec, check_parent=False) for c in grid.cells]
    assert {r.task for r in cells} == TASKS  # the 28-action tasks, as in the paper
    assert {r.method for r in cells} == ONI | {"none"}
    for r in cells:
        assert r.int_coef == (0.4 if r.method in ONI else 0.0)
        if r.label.endswith("-reward-free"):
            assert r.task == "nethack:score-extended" and r.ext_coef == 0.0 and r.method in ONI
        elif r.task == "nethack:score-extended":
            assert r.ext_coef == 0.1
        else:
            assert r.ext_coef == 10.0
    reward_free = {r.method for r in cells if r.ext_coef == 0.0}
    assert reward_free == ONI
    # every ONI method on every task, with and without reward, on the same seeds
    seeds = {r.seed for r in cells}
    for method in ONI:
        assert {(r.task, r.seed) for r in cells if r.method == method and r.ext_coef > 0} == \
            {(t, s) for t in TASKS for s in seeds}
