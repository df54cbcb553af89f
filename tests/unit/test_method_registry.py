"""Method registry: built-ins, decorator registration, entry-point plugins, option checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task, make_adapter
from llmexplore.errors import ConfigError
from llmexplore.lm.config import LMConfig
from llmexplore.methods import (CheckContext, IntrinsicReward, get_method, method_names, parse_options,
                                register_method)
from llmexplore.methods import registry


def test_builtins_are_listed():
    assert {"none", "rnd"} <= set(method_names())


def test_unknown_method_suggests_a_close_name():
    with pytest.raises(ConfigError, match="did you mean 'rnd'"):
        get_method("rndd")


def test_an_unknown_method_names_the_ways_a_plugin_is_found():
    with pytest.raises(ConfigError) as err:
        get_method("surprise-bonus")
    assert "entry point group 'llmexplore.methods'" in err.value.hint and "LLMEXPLORE_METHODS" in err.value.hint


def test_decorator_registers_a_method():
    @register_method
    class Constant(IntrinsicReward):
        name = "test-constant"

        def reward(self, batch):
            return torch.ones(batch.shape)

    assert get_method("test-constant") is Constant


def _plugin_method(cls: str, name: str, body: str = "") -> str:
    """Source of a module holding one method class; ``body`` adds class-level lines."""
    return textwrap.dedent(f"""
        import torch
        from llmexplore.methods import IntrinsicReward

        class {cls}(IntrinsicReward):
            name = "{name}"
    """) + textwrap.indent(textwrap.dedent(body), "    ") + textwrap.dedent("""
            def reward(self, batch):
                return torch.zeros(batch.shape)
    """)


def _install_plugins(tmp_path, monkeypatch, modules: dict[str, str], entry_points: dict[str, str]) -> None:
    """Write modules and one installed distribution naming them as method entry points, then make the
    registry look again."""
    for module, source in modules.items():
        (tmp_path / f"{module}.py").write_text(source)
    dist = tmp_path / "plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[llmexplore.methods]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_BROKEN", {})
    for module in modules:
        monkeypatch.delitem(sys.modules, module, raising=False)


def test_entry_point_plugin_is_found(tmp_path, monkeypatch):
    _install_plugins(tmp_path, monkeypatch, {"myplugin": _plugin_method("Curious", "plugin-curious")},
                     {"curious": "myplugin:Curious"})
    assert "plugin-curious" in method_names()


def test_bad_options_name_every_problem():
    with pytest.raises(ConfigError) as err:
        parse_options(get_method("rnd"), {"lr": -1, "bogus": 2})
    assert "lr" in str(err.value) and "bogus" in str(err.value)


def test_method_refuses_a_task_without_its_keys():
    rnd = get_method("rnd")
    options = parse_options(rnd, {"keys": ["message"]})
    task = get_task("crafter:reward")
    with pytest.raises(ConfigError, match="needs observation keys \\['message'\\]"):
        rnd.check_run(CheckContext(task, make_adapter(task).observation_space(), options, LMConfig()))


@pytest.mark.parametrize("old_hook", [
    "def check_task(cls, task, obs_space, options): pass",
    "def check_lm(cls, lm, options): pass",
    "def check_run(cls, task, options, lm): pass",
])
def test_a_method_overriding_a_retired_check_hook_is_refused_at_registration(old_hook):
    """The three check hooks became one ``check_run(run)``: a method written for the old ones is stopped
    when it registers, naming the new hook, instead of having its checks silently skipped."""
    namespace: dict = {}
    exec(textwrap.dedent(f"""
        import torch
        from llmexplore.methods import IntrinsicReward

        class Old(IntrinsicReward):
            name = "test-old-hooks"
            @classmethod
            {old_hook}
            def reward(self, batch):
                return torch.zeros(batch.shape)
    """), namespace)
    with pytest.raises(TypeError, match=r"move those checks into one classmethod `check_run\(cls, run\)`"):
        register_method(namespace["Old"])
    assert "test-old-hooks" not in method_names()


def test_one_check_hook_sees_the_whole_run_and_extends_the_key_check():
    calls = []

    @register_method
    class Careful(IntrinsicReward):
        name = "test-careful"
        required_keys = ("image",)

        @classmethod
        def check_run(cls, run: CheckContext) -> None:
            super().check_run(run)
            calls.append((run.task.name, sorted(run.obs_space.spaces), run.lm.backend))
            if run.lm.backend != "oracle":
                raise ConfigError("test-careful runs with the oracle only")

        def reward(self, batch):
            return torch.zeros(batch.shape)

    crafter, nethack = get_task("crafter:reward"), get_task("nethack:score")
    space = make_adapter(crafter).observation_space()
    Careful.check_run(CheckContext(crafter, space, Careful.Options(), LMConfig()))
    assert calls == [("crafter:reward", sorted(space.spaces), "oracle")]
    with pytest.raises(ConfigError, match="needs observation keys \\['image'\\]"):
        Careful.check_run(CheckContext(nethack, make_adapter(nethack).observation_space(), Careful.Options(),
                                       LMConfig()))
    assert len(calls) == 1  # the key check comes first
    with pytest.raises(ConfigError, match="oracle only"):
        resolve(RunSpec(method="test-careful", task="crafter:reward", steps=4096,
                        lm={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}),
                check_device=False)


def test_a_plugin_with_a_retired_hook_is_reported_with_the_new_hook(tmp_path, monkeypatch):
    old = _plugin_method("Old", "plugin-old", """
        @classmethod
        def check_task(cls, task, obs_space, options):
            pass
    """)
    _install_plugins(tmp_path, monkeypatch, {"oldplugin": old}, {"old": "oldplugin:Old"})
    assert "plugin-old" not in method_names() and "rnd" in method_names()
    with pytest.raises(ConfigError, match="overrides check_task.*check_run"):
        get_method("old")


def test_a_broken_plugin_is_one_warning_and_the_rest_still_works(tmp_path, monkeypatch, caplog):
    """Issue 28: a plugin whose import fails is skipped with one warning; built-ins and other plugins load,
    in-process and through the command line."""
    _install_plugins(tmp_path, monkeypatch, {"goodplugin": _plugin_method("Fine", "plugin-fine"),
                                             "brokenplugin": "import a_module_that_does_not_exist\n"},
                     {"broken": "brokenplugin:Method", "fine": "goodplugin:Fine"})
    with caplog.at_level("WARNING"):
        names = method_names()
    assert {"plugin-fine", "rnd", "none", "motif"} <= set(names)
    warnings = [r for r in caplog.records if "could not be loaded" in r.getMessage()]
    assert len(warnings) == 1 and "a_module_that_does_not_exist" in warnings[0].getMessage()
    with pytest.raises(ConfigError, match="method plugin 'broken' could not be loaded"):
        get_method("broken")

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(repo)]))
    done = subprocess.run([sys.executable, "-m", "llmexplore", "methods", "--json"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = {m["method"] for m in json.loads(done.stdout)}
    assert {"plugin-fine", "rnd", "motif"} <= listed
    assert done.stderr.count("could not be loaded") == 1 and "Traceback" not in done.stderr
