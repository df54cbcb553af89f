"""``train.compile``: the encoder compiled where it trains, eager where it acts, the same function."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from llmexplore.agents.encoders import compile_where_it_trains
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError


def _encoder():
    from sample_factory.utils.attr_dict import AttrDict

    from llmexplore.networks.encoders import GenericEncoder

    space = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (6,), np.float32)})
    torch.manual_seed(0)
    return GenericEncoder(AttrDict({}), space)


def test_the_compiled_encoder_trains_compiled_acts_eager_and_computes_the_same(monkeypatch):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    plain, compiled = _encoder(), compile_where_it_trains(_encoder())
    assert plain.state_dict().keys() == compiled.state_dict().keys()  # checkpoints do not change
    obs = {"x": torch.linspace(-1, 1, 4 * 6).reshape(4, 6)}
    with torch.no_grad():
        acted = compiled(obs)
    assert not counters["frames"], "acting (no gradients) must stay eager"
    trained = compiled(obs)
    assert counters["frames"]["ok"] >= 1, "the learner's pass (gradients on) must go through torch.compile"
    expected = plain(obs)
    torch.testing.assert_close(trained, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(acted, expected.detach(), rtol=1e-5, atol=1e-6)
    trained.square().sum().backward()
    expected.square().sum().backward()
    for mine, theirs in zip(compiled.parameters(), plain.parameters()):
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-4, atol=1e-6)


def test_compile_is_off_unless_asked_and_recorded_when_asked():
    assert resolve(RunSpec(method="none", task="crafter:reward-free", steps=8192)).train.compile == "off"
    run = resolve(RunSpec(method="none", task="crafter:reward-free", steps=8192,
                          train={"compile": "learner"}))
    assert run.train.compile == "learner"
    assert run.model_dump(mode="json")["train"]["compile"] == "learner"  # what resolved.json holds


def test_compile_on_a_cpu_without_a_cxx_compiler_is_refused_before_start(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler on it
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(ConfigError, match="needs a C\\+\\+ compiler"):
        resolve(RunSpec(method="none", task="crafter:reward-free", steps=8192, train={"compile": "learner"}))
    with pytest.raises(ConfigError, match="compile"):
        RunSpec.parse({"method": "none", "task": "crafter:reward-free", "train": {"compile": "everything"}})
