"""Grid files: expansion into cells, and validation that names every problem with its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_cartesian_product_with_tied_alternatives_and_dotted_keys(tmp_path):
    grid = load_grid(write(tmp_path, """
        name: g
        defaults: {steps: 8192, train: {batch_size: 1024, envs_per_worker: 16}}
        blocks:
          - vary: {method: [none, rnd], seed: [0, 1, 2]}
            set: {task: nethack:score}
          - set: {method: rnd, task: crafter:reward-free}
            tied:
              - {label: rnd-fast, method_options.lr: 0.001, train.batch_size: 512}
              - {label: rnd-slow, method_options.lr: 0.00001}
    """), out_dir=tmp_path / "out")
    ids = [c.id for c in grid.cells]
    assert len(ids) == 8 and len(set(ids)) == 8
    fast = grid.cell("rnd-fast/crafter:reward-free/seed0")
    assert fast.spec.method_options == {"lr": 0.001}
    assert fast.spec.train.batch_size == 512 and fast.spec.train.envs_per_worker == 16
    assert grid.cell("rnd-slow/crafter:reward-free/seed0").spec.train.batch_size == 1024
    assert fast.run_dir == tmp_path / "out" / "runs" / "rnd-fast" / "crafter-reward-free" / "seed0"


def test_every_problem_is_reported_with_its_line(tmp_path):
    path = write(tmp_path, """
        name: bad
        colour: blue
        defaults: {steps: 100000}
        blocks:
          - vary:
              method: [none, rnnd]
              task: [nethack:score, crafter:reward-free]
          - set: {method: rnd, task: nethack:oracle, steps: 100}
          - set: {method: rnd, task: nethack:score, method_options: {lr: -1}}
          - set: {method: none, task: nethack:nope}
    """)
    with pytest.raises(ConfigError) as err:
        load_grid(path)
    text = str(err.value)
    assert f"{path}:2: unknown key 'colour'" in text
    assert f"{path}:6: unknown method 'rnnd'" in text
    assert f"{path}:8:" in text and "smaller than one training batch" in text
    assert f"{path}:9:" in text and "lr: Input should be greater than 0" in text
    assert f"{path}:10: unknown task 'nethack:nope'" in text
    assert text.count("unknown method 'rnnd'") == 1  # one report, not one per crossed cell


def test_a_malformed_field_does_not_hide_the_cells_other_problems(tmp_path):
    """A cell whose run spec does not parse (a typo under `train`, a negative `seed`) is still resolved without
    the malformed values, so its unknown method and task come in the same report, not after a fix."""
    path = write(tmp_path, """
        name: bad
        defaults:
          steps: 10000
          train: {batch_sizee: 64}
        blocks:
          - vary:
              method: [rndx, none]
              task: [crafter:reward-free, nethack:scorex]
          - set: {method: nonee, task: crafter:reward-free, seed: -1}
        vary: {seed: [0, 1]}
    """)
    with pytest.raises(ConfigError) as err:
        load_grid(path)
    text = str(err.value)
    assert f"{path}:4: train.batch_sizee: Extra inputs are not permitted" in text
    assert f"{path}:7: unknown method 'rndx'" in text and f"{path}:8: unknown task 'nethack:scorex'" in text
    assert f"{path}:9: seed: Input should be greater than or equal to 0" in text
    assert f"{path}:9: unknown method 'nonee'" in text
    assert f"{path}:10: top-level 'vary' beside 'blocks'" in text  # it was silently ignored
    assert text.startswith("6 problems")  # the left-out values cause no problems of their own


def test_duplicate_cells_and_bad_structure(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_grid(write(tmp_path, """
            name: dup
            defaults: {steps: 8192}
            blocks:
              - set: {method: none, task: nethack:score}
              - set: {method: none, task: nethack:score, ext_coef: 1.0}
              - vary: {seed: 3}
        """))
    text = str(err.value)
    assert "appears twice" in text and "distinct labels" in text
    assert ":6: vary.seed must be a non-empty list" in text


def test_yaml_syntax_error_names_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"grid.yaml:4: not valid YAML.*flow mapping at line 3"):
        load_grid(write(tmp_path, "name: x\nblocks:\n  - set: {method: none\n"))


def test_reward_free_protocol_forces_and_checks_ext_coef(tmp_path):
    grid = load_grid(write(tmp_path, """
        name: rf
        suite: {protocol: reward-free, tasks: [crafter:reward-free, nethack:score], steps: 8192}
        vary: {method: [none, rnd]}
    """))
    assert {c.spec.task for c in grid.cells} == {"crafter:reward-free", "nethack:score"}
    assert all(c.spec.ext_coef == 0.0 for c in grid.cells)
    with pytest.raises(ConfigError, match="ext_coef must be 0"):
        load_grid(write(tmp_path, """
            name: rf
            suite: {protocol: reward-free, tasks: [nethack:score], steps: 8192}
            set: {method: none, ext_coef: 0.1}
        """))


def test_pretrain_finetune_links_each_finetune_cell_to_its_parent(tmp_path):
    grid = load_grid(write(tmp_path, """
        name: pf
        suite:
          protocol: pretrain-finetune
          tasks: [crafter:reward-free]
          steps: 8192
          finetune: {task: crafter:reward, steps: 4096, reset: [critic]}
        vary: {method: [rnd], seed: [0, 1]}
    """))
    children = [c for c in grid.cells if c.parent_id]
    assert len(children) == 2
    for child in children:
        parent = grid.cell(child.parent_id)
        assert child.spec.parent.run_dir == str(parent.run_dir)
        assert child.spec.parent.reset == ["critic"]
        assert child.spec.task == "crafter:reward" and child.spec.method == "none"
        assert child.spec.seed == parent.spec.seed


def test_a_finetune_cell_without_steps_takes_its_parents_budget_as_resolved(tmp_path):
    """The parent sets no steps (Crafter's published million, chosen when it is resolved): the fine-tuning
    cell on NetHack trains for that million, not for NetHack's own published 2 billion (refused unasked)."""
    grid = load_grid(write(tmp_path, """
        name: pf
        suite:
          protocol: pretrain-finetune
          tasks: [crafter:reward-free]
          finetune: {task: nethack:score}
        vary: {method: [rnd]}
    """), out_dir=tmp_path / "out")
    parent, child = grid.cells
    assert parent.spec.steps is None and parent.run.steps == 1_000_000
    assert child.spec.steps == 1_000_000 and child.run.steps == 1_000_000
    published = load_grid(write(tmp_path, """
        name: pf
        suite:
          protocol: pretrain-finetune
          tasks: [crafter:reward-free]
          finetune: {task: nethack:score, steps: published}
        vary: {method: [rnd]}
    """), out_dir=tmp_path / "out")
    assert published.cells[1].run.steps == 2_000_000_000  # asked for by name


@pytest.mark.parametrize("name", ["quickstart.yaml", "crafter.yaml", "nethack.yaml", "nethack-cluster.yaml"])
def test_shipped_grids_validate(name):
    grid = load_grid(REPO / "configs" / name)
    assert grid.cells


def test_motif_grid_has_the_published_coefficients_and_steering_models(tmp_path, monkeypatch):
    from llmexplore.benchmarks.run.spec import resolve
    from llmexplore.methods.motif.artifacts import save_reward_model
    from llmexplore.methods.motif.model import MotifRewardModel

    monkeypatch.chdir(tmp_path)  # the grid's reward-model paths are relative to where it is run
    with pytest.raises(ConfigError) as missing:
        load_grid(REPO / "configs" / "motif.yaml", out_dir=tmp_path / "out")
    for goal in ("defaultgoal", "combat", "gold", "stairs"):
        assert f"models/motif/{goal}-default does not exist" in str(missing.value)
    assert "scripts/motif_pipeline.sh" in str(missing.value)

    for goal in ("defaultgoal", "combat", "gold", "stairs"):
        folder = tmp_path / "models" / "motif" / f"{goal}-default"
        folder.mkdir(parents=True)
        save_reward_model(folder, MotifRewardModel(), 0.0, 1.0, 2, 2, np.array([-1.0, 1.0]), {})
    grid = load_grid(REPO / "configs" / "motif.yaml", out_dir=tmp_path / "out")
    resolved = {c.id: resolve(c.spec) for c in grid.cells}
    assert len(resolved) == 3 * (6 + 2 + 3)
    for cell_id, run in resolved.items():
        assert run.method == "motif" and run.int_coef == 0.1
        label, task, _ = cell_id.split("/")
        model = run.method_options["reward_model"]
        if label == "motif":
            assert run.ext_coef == (0.1 if task == "nethack:score" else 10.0)
            assert model == "models/motif/defaultgoal-default"
        elif label == "motif-intrinsic-only":
            assert task.endswith("-continual") and run.ext_coef == 0.0
            assert model == "models/motif/defaultgoal-default"
        else:
            goal = label.removeprefix("motif-")
            assert goal in ("combat", "gold", "stairs") and task == "nethack:score" and run.ext_coef == 0.1
            assert model == f"models/motif/{goal}-default"
    assert {c.spec.seed for c in grid.cells} == {0, 1, 2}


def test_a_missing_budget_of_days_asks_for_steps_like_the_run_command(tmp_path):
    """Grid files follow `llmexplore run`'s budget rule (budget.choose_steps): no steps on NetHack (2 billion
    env steps, weeks here) is an error naming the fix; Crafter's published million is taken; `published`
    asks for the published budget by name."""
    with pytest.raises(ConfigError) as caught:
        load_grid(write(tmp_path, """
            name: g
            set: {method: none}
            tied:
              - {task: crafter:reward-free}
              - {task: nethack:score}
        """), out_dir=tmp_path / "out")
    message = str(caught.value)
    assert "grid.yaml:5: no steps given: nethack:score's published budget" in message and "2,000,000,000" in message
    assert "steps: N" in message and "steps: published" in message and "crafter" not in message

    grid = load_grid(write(tmp_path, """
        name: g
        set: {method: none}
        tied:
          - {task: crafter:reward-free}
          - {task: nethack:score, steps: published}
          - {task: nethack:oracle, steps: 4096}
    """), out_dir=tmp_path / "out")
    assert [c.run.steps for c in grid.cells] == [1_000_000, 2_000_000_000, 4096]


def test_suite_steps_may_name_the_published_budget(tmp_path):
    grid = load_grid(write(tmp_path, """
        name: g
        suite: {steps: published, tasks: [nethack:score, crafter:reward]}
        set: {method: none}
    """), out_dir=tmp_path / "out")
    assert {c.spec.task: c.run.steps for c in grid.cells} == {"nethack:score": 2_000_000_000,
                                                              "crafter:reward": 1_000_000}
    with pytest.raises(ConfigError, match="steps: must be a positive whole number"):
        load_grid(write(tmp_path, """
            name: g
            set: {method: none, task: crafter:reward, steps: lots}
        """), out_dir=tmp_path / "out")
