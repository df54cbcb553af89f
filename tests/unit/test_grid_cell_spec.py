"""The spec.yaml a grid writes for people resolves, by hand (`llmexplore run --config spec.yaml`), to the run
the grid resolved and wrote as resolved.json."""

from __future__ import annotations

import yaml

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.benchmarks.grids.runners.base import SPEC_FILE, prepare_cell_folder
from llmexplore.benchmarks.run.spec import RunSpec, resolve


def test_a_preset_cell_keeps_its_preset_through_spec_yaml(tmp_path):
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(
        "name: presets\n"
        "lm: {backend: openai, model: some-model, base_url: 'http://localhost:9/v1', temperature: 0.3}\n"
        "defaults: {steps: 1000000}\n"
        "blocks:\n"
        "  - set: {method: none, task: crafter:reward, label: ppo-published, train: {preset: published}}\n"
        "    vary: {seed: [0]}\n"
        "  - set: {method: rnd, task: crafter:reward-free, train: {preset: published, rollout: 128},\n"
        "          method_options: {lr: 0.001}}\n"
        "    vary: {seed: [1]}\n")
    grid = load_grid(grid_file, tmp_path / "out")
    for cell in grid.cells:
        prepare_cell_folder(cell)
        written = RunSpec(**yaml.safe_load((cell.run_dir / SPEC_FILE).read_text()))
        assert resolve(written) == resolve(cell.spec)
        assert ResolvedRun.read(cell.run_dir) == cell.run  # what the cell trains: the grid's resolution
    published = grid.cells[0].run.train
    assert published.batch_size == 2048 and published.network == "published"  # the preset's, not the defaults
    assert resolve(grid.cells[1].spec).train.rollout == 128
    assert resolve(grid.cells[1].spec).lm.model == "some-model" and resolve(grid.cells[1].spec).lm.temperature == 0.3  # what the grid file set wins over the preset
