"""A MiniHack row can be "suite defaults" or "as published" by name (issue 48, item 3): `-o preset=NAME`
fills the options a method's published code used, and c_int, wherever the run does not set them."""

from __future__ import annotations

import pytest

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.benchmarks.run.folder import adopt_folder
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError

TASK = "minihack:keyroom-s5"


def _run(method: str, int_coef: float | None = None, **options) -> ResolvedRun:
    return resolve(RunSpec(method=method, task=TASK, seed=0, steps=4096, int_coef=int_coef,
                           method_options=options))


def test_e3b_as_published_ends_phi_in_a_relu_clips_at_40_and_weighs_the_bonus_1():
    run = _run("e3b", preset="published")
    assert (run.method_options["embedding_output"], run.method_options["max_grad_norm"], run.int_coef) == \
        ("relu", 40.0, 1.0)
    layernorm = _run("e3b", preset="sample-factory")
    assert (layernorm.method_options["embedding_output"], layernorm.method_options["max_grad_norm"]) == \
        ("layernorm", 4.0)


def test_noveld_presets_and_what_a_run_sets_itself_wins():
    published = _run("noveld", preset="published")
    assert (published.method_options["alpha"], published.method_options["predictor_loss"], published.int_coef) == \
        (0.1, "norm", 1.0)
    code = _run("noveld", preset="code")
    assert (code.method_options["normalize"], code.int_coef) == (False, 0.5)
    mine = _run("noveld", int_coef=0.2, preset="published", alpha=0.3)
    assert (mine.method_options["alpha"], mine.int_coef) == (0.3, 0.2)
    assert _run("noveld").method_options["preset"] is None and _run("noveld").int_coef == 0.5  # defaults unchanged


def test_an_unknown_preset_names_the_method_s_presets_and_a_method_without_presets_refuses_the_option():
    with pytest.raises(ConfigError, match="has no preset 'minihack'") as caught:
        _run("e3b", preset="minihack")
    assert "published, sample-factory" in str(caught.value)
    with pytest.raises(ConfigError, match="preset"):
        _run("rnd", preset="published")


def test_a_folder_made_before_presets_resumes_and_a_preset_makes_another_run(tmp_path):
    run = _run("e3b")
    older = run.model_copy(update={"method_options": {k: v for k, v in run.method_options.items() if k != "preset"}})
    older.write(tmp_path)
    adopt_folder(tmp_path, run)  # the new option at its default: the same run
    with pytest.raises(ConfigError, match="holds a different run"):
        adopt_folder(tmp_path, _run("e3b", preset="published"))
