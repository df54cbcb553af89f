"""``train.sampling`` (issue 54): per-env or batched, the family's measured default, what sample-factory is
told for each, combinations it would reject refused before start, and runs made before the option read as
per-env (they resume as such, and a batched run is another run)."""

from __future__ import annotations

import json
import re

import pytest

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.training import sf_argv
from llmexplore.benchmarks.run.folder import adopt_folder
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError


def _run(task: str = "nethack:score", **train) -> ResolvedRun:
    return resolve(RunSpec(method="none", task=task, seed=0, steps=100_000, train=train))


def _sf(run: ResolvedRun) -> dict[str, str]:
    return dict(arg[2:].split("=", 1) for arg in sf_argv(run, "/tmp/x"))


def test_each_path_tells_sample_factory_its_envs():
    """Per-env: every env is sample-factory's, in two halves; batched: one vector env of the worker's 32, or
    one per half when sf_args split them."""
    per_env = _sf(_run(sampling="per-env"))
    assert (per_env["num_envs_per_worker"], per_env["worker_num_splits"], "batched_sampling" in per_env) == (
        "32", "2", False)
    batched = _sf(_run(sampling="batched"))
    assert (batched["num_envs_per_worker"], batched["worker_num_splits"], batched["batched_sampling"]) == (
        "1", "1", "True")
    halves = _sf(_run(sampling="batched", sf_args={"worker_num_splits": 2}))
    assert (halves["num_envs_per_worker"], halves["worker_num_splits"]) == ("2", "2")
    odd = _sf(_run(sampling="batched", envs_per_worker=3, batch_size=96, rollout=32))
    assert (odd["num_envs_per_worker"], odd["worker_num_splits"]) == ("1", "1")


@pytest.mark.parametrize("family, task", [("nethack", "nethack:score"), ("crafter", "crafter:reward"),
                                          ("minihack", "minihack:multiroom-n2")])
def test_each_family_names_its_default_path(family, task):
    from llmexplore.agents.train_config import family_defaults

    assert _run(task).train.sampling == family_defaults(family)["sampling"] in ("per-env", "batched")


@pytest.mark.parametrize("train, rule", [
    ({"sampling": "batched", "envs_per_worker": 12, "batch_size": 2048, "num_workers": 2},
     "must divide one another; e.g. -t envs_per_worker=8, or -t sampling=per-env"),
    ({"sampling": "batched", "envs_per_worker": 12, "batch_size": 2048, "num_workers": 2,
      "sf_args": {"worker_num_splits": 2}}, "(envs_per_worker / splits = 12 / 2 = 6)"),
    ({"sampling": "batched", "sf_args": {"num_envs_per_worker": 4}}, "leave them out of sf_args"),
    ({"sampling": "batched", "sf_args": {"batched_sampling": True}}, "leave them out of sf_args"),
])
def test_combinations_sample_factory_would_reject_are_refused_before_start(train, rule):
    """12 envs in one vector env (or two of 6) against 64 trajectories per update: sample-factory asserts inside
    a worker; here it is one clear error naming the rule and a fix."""
    with pytest.raises(ConfigError, match=re.escape(rule)):
        _run(**train)


def test_a_run_resolved_before_the_option_ran_per_env_and_resumes_so(tmp_path):
    per_env = _run(sampling="per-env")
    fields = per_env.model_dump(mode="json")
    del fields["train"]["sampling"]
    (tmp_path / "resolved.json").write_text(json.dumps(fields))  # no digest: a file of an older version
    assert ResolvedRun.read(tmp_path).train.sampling == "per-env"
    adopt_folder(tmp_path, per_env)  # the same run
    with pytest.raises(ConfigError, match="train.sampling: 'per-env' before, 'batched' now"):
        adopt_folder(tmp_path, _run(sampling="batched"))


def test_bench_gives_the_ratio_of_each_training_measured_on_both_paths():
    from llmexplore.benchmarks.speed import Measurement, sampling_ratios

    rows = [Measurement("train", "nethack:score", f"none, preset default, sampling={path}", rate, 60.0)
            for path, rate in (("per-env", 2000.0), ("batched", 2900.0))]
    rows.append(Measurement("train", "crafter:reward", "none, preset default, sampling=batched", 900.0, 60.0))
    assert sampling_ratios(rows) == ["nethack:score, none, preset default: 1.45x"]  # Crafter has one path only


def test_a_batched_family_default_falls_back_to_per_env_where_the_settings_do_not_fit(monkeypatch):
    """A family whose measured default is batched still takes settings batched sampling cannot run (the
    24 envs against 128 trajectories per update): its default is then per-env, while
    asking for batched by name is refused."""
    from llmexplore.agents import train_config
    from llmexplore.agents.train_config import GENERIC_DEFAULTS, TrainConfig

    monkeypatch.setattr(train_config, "family_defaults", lambda family: {**GENERIC_DEFAULTS, "sampling": "batched"})
    assert TrainConfig().resolved("any").sampling == "batched"  # 16 envs in one vector env, 32 trajectories
    assert TrainConfig(envs_per_worker=24, batch_size=4096).resolved("any").sampling == "per-env"
    assert TrainConfig(sf_args={"batched_sampling": True}).resolved("any").sampling == "per-env"
    assert TrainConfig(envs_per_worker=24, batch_size=4096, sampling="batched").resolved("any").sampling == "batched"
