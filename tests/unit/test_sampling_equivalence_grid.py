"""The sampling-path equivalence grid (issue 54): each method's two rows differ in the sampling path alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
#: each family's equivalence grid and its task
GRIDS = {"sampling-equivalence.yaml": "nethack:score", "sampling-equivalence-crafter.yaml": "crafter:reward"}


def _without_path(cell) -> dict:
    run = cell.run.model_dump()
    run.pop("label", None)
    run["train"].pop("sampling")
    return run


@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_each_methods_two_rows_differ_in_the_sampling_path_alone(tmp_path, grid):
    cells = load_grid(CONFIGS / grid, out_dir=tmp_path / "out").cells
    assert {cell.spec.task for cell in cells} == {GRIDS[grid]}
    by_row = {}
    for cell in cells:
        by_row.setdefault(cell.spec.label, []).append(cell)
    assert set(by_row) == {f"{method}-{path}" for method in ("none", "rnd", "e3b") for path in ("per-env", "batched")}
    for label, row in by_row.items():
        method, path = label.split("-", 1)
        assert sorted(c.spec.seed for c in row) == [0, 1, 2], label
        for cell in row:
            assert cell.spec.method == method and cell.run.train.sampling == path, label
            assert cell.run.budget == 1_000_000 and cell.run.train.reward_streams == 1, label
    for method in ("none", "rnd", "e3b"):
        per_env = {c.spec.seed: c for c in by_row[f"{method}-per-env"]}
        batched = {c.spec.seed: c for c in by_row[f"{method}-batched"]}
        for seed, cell in per_env.items():
            assert _without_path(cell) == _without_path(batched[seed]), (method, seed)
