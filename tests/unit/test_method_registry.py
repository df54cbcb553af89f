"""Method registry: built-ins, decorator registration, entry-point plugins, option checks."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from llmexplore.envs import get_task, make_adapter
from llmexplore.errors import ConfigError
from llmexplore.methods import IntrinsicReward, get_method, method_names, parse_options, register_method
from llmexplore.methods import registry


def test_builtins_are_listed():
    assert {"none", "rnd"} <= set(method_names())


def test_unknown_method_suggests_a_close_name():
    with pytest.raises(ConfigError, match="did you mean 'rnd'"):
        get_method("rndd")


def test_decorator_registers_a_method():
    @register_method
    class Constant(IntrinsicReward):
        name = "test-constant"

        def reward(self, batch):
            return torch.ones(batch.shape)

    assert get_method("test-constant") is Constant


def test_entry_point_plugin_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "myplugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        import torch
        from llmexplore.methods import IntrinsicReward

        class Curious(IntrinsicReward):
            name = "plugin-curious"
            def reward(self, batch):
                return torch.zeros(batch.shape)
    """))
    dist = tmp_path / "myplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[llmexplore.methods]\ncurious = myplugin:Curious\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    assert "plugin-curious" in method_names()
    sys.modules.pop("myplugin", None)


def test_bad_options_name_every_problem():
    with pytest.raises(ConfigError) as err:
        parse_options(get_method("rnd"), {"lr": -1, "bogus": 2})
    assert "lr" in str(err.value) and "bogus" in str(err.value)


def test_method_refuses_a_task_without_its_keys():
    rnd = get_method("rnd")
    options = parse_options(rnd, {"keys": ["message"]})
    task = get_task("crafter:reward")
    with pytest.raises(ConfigError, match="needs observation keys \\['message'\\]"):
        rnd.check_task(task, make_adapter(task).observation_space(), options)
