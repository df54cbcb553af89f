"""Housekeep tasks, adapter, policy encoder and RND inputs."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from llmexplore.agents.train_config import network_encoder
from llmexplore.networks.encoders import encoder_class
from llmexplore.envs import get_task, make_adapter, task_names
from llmexplore.envs.housekeep import scenes
from llmexplore.errors import DataError
from llmexplore.lm.config import LMConfig
from llmexplore.methods import CheckContext, MethodContext, RewardBatch, get_method, parse_options
from tests.conftest import SHARED_DATA

needs_data = pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")


def test_a_task_per_scene_and_split_with_reward_free_variants():
    names = set(task_names())
    for short, scene in scenes.SHORT_NAMES.items():
        for suffix, free in (("", False), ("-reward-free", True)):
            task = get_task(f"housekeep:{short}{suffix}")
            assert task.reward_free is free and task.options["scenes"] == (scene,)
            assert task.default_ext_coef == (0.0 if free else 1.0)
    assert {"housekeep:train", "housekeep:val-reward-free", "housekeep:test"} <= names
    assert "housekeep:pomaria_0" in names and "housekeep:rs" in names
    assert len([n for n in names if n.startswith("housekeep:")]) == 2 * (14 + 3)


def test_observation_keys_need_no_data(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMEXPLORE_HOUSEKEEP_DATA", str(tmp_path / "missing"))
    adapter = make_adapter("housekeep:pomaria_0")
    assert set(adapter.obs_keys) == {"room", "rooms", "receptacles", "at", "objects", "object_on", "held"}
    with pytest.raises(DataError, match="github.com/yashkant/housekeep"):
        adapter.validate_data()


@needs_data
def test_a_scene_missing_from_the_data_is_named():
    with pytest.raises(DataError) as err:
        make_adapter("housekeep:rs").validate_data()
    assert "Rs_int.json.gz" in str(err.value)


@needs_data
def test_split_task_samples_the_present_scenes_and_says_which_are_missing(monkeypatch):
    import llmexplore.envs.housekeep.adapter as adapter_module

    monkeypatch.setattr(adapter_module, "_warned", set())  # it warns once per process
    adapter = make_adapter("housekeep:train-reward-free")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        present = adapter.scene_ids()
    assert set(present) == {"Benevolence_2_int", "Pomaria_0_int", "Pomaria_2_int"}
    assert any("Wainscott_0_int" in str(w.message) for w in caught)
    env = adapter.make_env(seed=0)
    seen = set()
    for _ in range(60):
        env.reset()
        seen.add(env.scene.scene)
    assert seen == set(present)


@needs_data
def test_summary_reports_the_metric_as_a_mean():
    adapter = make_adapter("housekeep:merom_1")
    rows = [{"rearrange_success": 0.5, "objects_fixed": 1, "length": 100, "return": 2.0},
            {"rearrange_success": 1.0, "objects_fixed": 3, "length": 40, "return": 9.0}]
    summary = adapter.summarize(rows)
    assert adapter.metric == "rearrange_success"
    assert summary["rearrange_success"] == 0.75 and summary["objects_fixed"] == 2 and summary["episodes"] == 2


@needs_data
def test_encoder_and_rnd_take_real_observations():
    adapter = make_adapter("housekeep:merom_1")
    env = adapter.make_env(seed=0)
    space = adapter.observation_space()
    frames = []
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(2 * 9):
        frames.append(obs)
        obs, *_ = env.step(int(rng.integers(env.action_space.n)))
    batch = {k: torch.as_tensor(np.stack([f[k] for f in frames])).float() for k in space.spaces}

    encoder = encoder_class(network_encoder(adapter.family, "small"))(SimpleNamespace(), space)
    out = encoder(batch)
    assert out.shape == (18, encoder.get_out_size()) and torch.isfinite(out).all()

    task = get_task("housekeep:merom_1-reward-free")
    cls = get_method("rnd")
    options = parse_options(cls, {})
    cls.check_run(CheckContext(task, space, options, LMConfig()))
    rnd = cls(options, MethodContext(task=task, seed=0, run_dir=Path(".")), space)
    assert set(rnd.keys) <= set(space.spaces) and "objects" in rnd.keys
    reward_batch = RewardBatch(obs={k: v.reshape(2, 9, *v.shape[1:]) for k, v in batch.items()},
                               actions=torch.zeros(2, 8), dones=torch.zeros(2, 8))
    assert rnd.reward(reward_batch).shape == (2, 8)
