"""One resolution per cell: the grid resolves each cell when it checks the grid file, writes that resolved run
to the cell's folder before the cell starts, and the cell trains it as it is (issue 36). What depends on the
machine or the moment stays with them: a fine-tuning cell's parent checkpoint is chosen when the parent has
finished, the device is checked where the cell runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from llmexplore.agents.checkpoints import CHECKPOINT_KEY, sf_experiment_dir
from llmexplore.agents.resolved_run import RESOLVED_FILE, ResolvedRun
from llmexplore.benchmarks.grids import grid_file
from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.grids.runners.base import (SPEC_FILE, CellJob, GridBackend, GridRunner, cell_command,
                                                      prepare_cell_folder)
from llmexplore.benchmarks.run import cell as cell_module
from llmexplore.benchmarks.run import spec as spec_module
from llmexplore.benchmarks.run.record import RunRecord
from llmexplore.benchmarks.run.spec import settle_here
from llmexplore.cli import main
from llmexplore.errors import ConfigError

TWO_CELLS = """
    name: two
    defaults: {train: {envs_per_worker: 8, batch_size: 512}}
    set: {method: none, task: crafter:reward-free, steps: 2048}
    vary: {seed: [0, 1]}
"""
PRETRAIN_FINETUNE = """
    name: pf
    suite:
      protocol: pretrain-finetune
      tasks: [crafter:reward-free]
      steps: 2048
      finetune: {task: crafter:reward, steps: 2048, reset: [critic]}
    defaults: {train: {envs_per_worker: 8, batch_size: 512}}
    vary: {method: [none], seed: [0]}
"""


def _grid(tmp_path: Path, body: str):
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    return load_grid(path, tmp_path / "out")


class _Ended(CellJob):
    def poll(self) -> int | None:
        return 1

    def cancel(self, grace_seconds: float) -> None:
        pass


class _Recorder(GridBackend):
    """Starts nothing: notes what each cell's folder held when the runner started it."""

    name = "recorder"

    def __init__(self):
        self.seen: dict[str, ResolvedRun | None] = {}

    @property
    def capacity(self) -> int:
        return 4

    def start(self, cell, attempt: int) -> CellJob:
        self.seen[cell.id] = ResolvedRun.read(cell.run_dir)
        return _Ended()


def _record_of(run: ResolvedRun) -> RunRecord:
    return RunRecord(status="complete", cell=f"{run.label}/{run.task}/seed{run.seed}", spec=run.spec_dict(),
                     environment={}, started_at="t0", updated_at="t1", budget=run.steps, env_steps=run.steps,
                     wall_seconds=1.0, steps_per_second=1.0, metric="score")


def test_the_grid_writes_the_run_it_resolved_and_the_cell_trains_it_without_resolving_again(tmp_path, monkeypatch):
    calls: list[str] = []
    real_resolve = grid_file.resolve
    monkeypatch.setattr(grid_file, "resolve", lambda spec, **kw: calls.append(spec.task) or real_resolve(spec, **kw))
    grid = _grid(tmp_path, TWO_CELLS)
    assert len(calls) == 2 and all(cell.run is not None for cell in grid.cells)  # once per cell

    backend = _Recorder()
    GridRunner(grid, backend, retries=0, poll_seconds=0.01).run()
    for cell in grid.cells:
        assert backend.seen[cell.id] == cell.run  # in the folder before the cell started
        assert yaml.safe_load((cell.run_dir / SPEC_FILE).read_text())["seed"] == cell.spec.seed  # for people
        assert cell_command(cell)[-4:] == ["run", "--out", str(cell.run_dir), "--quiet"]

    # the cell's command: the folder's resolved run goes to the cell as it is; nothing resolves it again
    def no_resolve(*args, **kwargs):
        raise AssertionError("the cell resolved its spec again")

    monkeypatch.setattr(spec_module, "resolve", no_resolve)
    monkeypatch.setattr(cell_module, "resolve", no_resolve)
    trained: list[object] = []
    monkeypatch.setattr(cell_module, "_train_unless_complete",
                        lambda run, run_dir, previous, quiet: trained.append(run) or _record_of(run))
    first = grid.cells[0]
    assert main(["run", "--out", str(first.run_dir), "--quiet"]) == 0
    assert trained == [settle_here(first.run)]  # only what depends on this machine settled here


def test_a_folder_holding_another_run_fails_its_cell_in_the_grid_before_it_starts(tmp_path):
    grid = _grid(tmp_path, TWO_CELLS)
    taken = grid.cells[0]
    taken.run_dir.mkdir(parents=True)
    taken.run.model_copy(update={"int_coef": 0.3}).write(taken.run_dir)
    backend = _Recorder()
    summary = GridRunner(grid, backend, retries=0, poll_seconds=0.01).run()
    by_id = {c["id"]: c for c in summary["cells"]}
    assert taken.id not in backend.seen and by_id[taken.id]["status"] == "failed"
    assert "holds a different run (int_coef: 0.3 before, 0.0 now)" in by_id[taken.id]["error"]
    assert ResolvedRun.read(taken.run_dir).int_coef == 0.3  # nothing written over it
    assert grid.cells[1].id in backend.seen


def test_a_finetune_cell_gets_its_parent_checkpoint_when_the_parent_has_finished(tmp_path):
    import torch

    grid = _grid(tmp_path, PRETRAIN_FINETUNE)
    child = next(c for c in grid.cells if c.parent_id)
    parent = grid.cell(child.parent_id)
    assert child.run.parent.checkpoint is None  # the parent has not trained when the grid is checked
    with pytest.raises(ConfigError, match="has no checkpoint"):
        prepare_cell_folder(child)
    assert not (child.run_dir / RESOLVED_FILE).exists()

    folder = sf_experiment_dir(parent.run_dir) / "checkpoint_p0"
    folder.mkdir(parents=True)
    saved = folder / "checkpoint_000000004_2048.pth"
    torch.save({"model": {}, CHECKPOINT_KEY: {"task": parent.spec.task}}, saved)
    prepare_cell_folder(child)
    written = ResolvedRun.read(child.run_dir)
    assert written.parent.checkpoint == str(saved) and written.parent.reset == ["critic"]
    assert written.model_copy(update={"parent": child.run.parent}) == child.run  # the rest as resolved


def test_the_cell_settles_and_checks_what_depends_on_its_machine(tmp_path, monkeypatch):
    """The grid leaves the torch threads (and an ``auto`` device) open: each local cell gets its own share of
    threads through OMP_NUM_THREADS, and a node of a cluster may have other cores than the submitting host."""
    import torch

    run = _grid(tmp_path, TWO_CELLS).cells[0].run
    assert run.train.torch_threads is None
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    settled = settle_here(run)
    assert settled.train.torch_threads == 3 and settled.model_copy(update={"train": run.train}) == run
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    on_gpu = run.model_copy(update={"train": run.train.model_copy(update={"device": "gpu"})})
    with pytest.raises(ConfigError, match="no CUDA device is visible"):
        settle_here(on_gpu)
