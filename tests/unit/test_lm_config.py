"""LMConfig stays compatible with older run specs and resolves caches and backends clearly."""

from __future__ import annotations

import pytest

from llmexplore.benchmarks.run.spec import RunSpec
from llmexplore.errors import ConfigError
from llmexplore.lm.backends import make_lm, parse_lm_config
from llmexplore.lm.config import LMConfig, SamplingParams


def test_older_specs_still_parse_and_new_fields_default_to_published_sampling():
    spec = RunSpec.parse({"method": "none", "task": "nethack:score",
                          "lm": {"backend": "openai", "model": "m", "base_url": "http://h/v1", "options": {}}})
    assert spec.lm.endpoint == "chat" and spec.lm.sampling() == SamplingParams(temperature=0.1, top_p=0.95)
    assert RunSpec.parse({"method": "none", "task": "nethack:score"}).lm.backend == "oracle"
    with pytest.raises(ConfigError, match="lm.backend"):
        RunSpec.parse({"method": "none", "task": "nethack:score", "lm": {"backend": "gpt"}})


def test_cache_path_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("LLMEXPLORE_LM_CACHE", raising=False)
    assert LMConfig(cache=str(tmp_path / "a.sqlite3")).cache_path(tmp_path / "x") == str(tmp_path / "a.sqlite3")
    assert LMConfig().cache_path(tmp_path) == str(tmp_path / "lm-cache.sqlite3")
    monkeypatch.setenv("LLMEXPLORE_LM_CACHE", str(tmp_path / "env.sqlite3"))
    assert LMConfig().cache_path(tmp_path) == str(tmp_path / "env.sqlite3")


def test_make_lm_from_a_method_context_dict(tmp_path):
    with make_lm({"backend": "oracle", "cache": str(tmp_path / "c.sqlite3")}) as lm:
        assert lm.model_id.startswith("llmexplore-oracle") and lm.stats()["entries"] == 0
    with pytest.raises(ConfigError, match="invalid LM settings: top_p"):
        parse_lm_config({"top_p": 0})
    with pytest.raises(ConfigError, match="needs `model`"):
        make_lm({"backend": "vllm", "cache": ":memory:"})
    with pytest.raises(ConfigError, match="not found"):
        make_lm({"backend": "vllm", "model": str(tmp_path / "no-weights"), "cache": ":memory:"})


def test_vllm_absent_names_the_extra(tmp_path):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    from llmexplore.errors import MissingExtraError

    (tmp_path / "weights").mkdir()
    with pytest.raises(MissingExtraError, match=r"pip install 'llmexplore\[vllm\]'"):
        make_lm({"backend": "vllm", "model": str(tmp_path / "weights"), "cache": ":memory:"})
