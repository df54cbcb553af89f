"""sample-factory's mends for today's packages (agents/sf_compat.py): each works, each is applied only
where needed and in every process sample-factory spawns, and a missing or outdated one stops the run."""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from sample_factory.algo.utils.tensor_dict import TensorDict

from llmexplore.agents import sf_compat, sf_private

NUMPY_MEND = sf_compat.MENDS[0]


@pytest.fixture
def restore_tensor_dict():
    original = TensorDict.__dict__["_set_data_func"]
    yield
    TensorDict._set_data_func = original


def _buffers() -> TensorDict:
    return TensorDict({"rewards": np.zeros((2, 3), dtype=np.float32),
                       "obs": {"pos": np.zeros((2, 3, 2), dtype=np.float32)},
                       "dones": torch.zeros((2, 3))})


def test_the_numpy_mend_writes_single_element_arrays_as_scalars_and_leaves_the_rest_alone(restore_tensor_dict):
    NUMPY_MEND.apply()
    buffers = _buffers()
    buffers[1, 2] = {"rewards": np.array([1.5], dtype=np.float32), "obs": {"pos": np.array([3.0, 4.0])},
                     "dones": torch.tensor(1.0)}
    buffers[0, 0] = {"rewards": torch.tensor([2.5]), "obs": {"pos": torch.tensor([5.0, 6.0])},
                     "dones": np.array(1.0, dtype=np.float32)}
    assert buffers["rewards"].tolist() == [[2.5, 0, 0], [0, 0, 1.5]]
    assert buffers["obs"]["pos"][1, 2].tolist() == [3.0, 4.0] and buffers["obs"]["pos"][0, 0].tolist() == [5, 6]
    assert buffers["dones"].tolist() == [[1, 0, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="not supported"):
        buffers[0, 1] = {"rewards": [1.0]}  # what sample-factory refuses, it still refuses


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.4.0", reason="numpy < 2.4 accepts it as it is")
def test_without_the_mend_numpy_2_4_refuses_what_sample_factory_writes(restore_tensor_dict):
    TensorDict._set_data_func = NUMPY_MEND.replaces()
    with pytest.raises((ValueError, TypeError)):
        _buffers()[0, 0] = {"rewards": np.array([1.0], dtype=np.float32)}


def test_a_mend_is_applied_only_where_the_packages_need_it(monkeypatch, restore_tensor_dict):
    TensorDict._set_data_func = NUMPY_MEND.replaces()
    monkeypatch.setattr(sf_compat, "_numpy_version", lambda: (2, 3))
    assert "TensorDict._set_data_func" not in sf_compat.apply_all()
    assert not NUMPY_MEND.applied() and sf_compat.problems() == []
    monkeypatch.setattr(sf_compat, "_numpy_version", lambda: (2, 4))
    assert "TensorDict._set_data_func" in sf_compat.apply_all() and NUMPY_MEND.applied()


def test_a_needed_mend_not_in_place_or_written_for_other_code_stops_the_run(monkeypatch, restore_tensor_dict):
    monkeypatch.setattr(sf_compat, "_numpy_version", lambda: (2, 5))
    TensorDict._set_data_func = NUMPY_MEND.replaces()
    assert sf_compat.problems()[0].startswith("TensorDict._set_data_func: needed (numpy >= 2.4")
    changed = dataclasses.replace(NUMPY_MEND, apply=lambda: None, digest="0" * 16)
    monkeypatch.setattr(sf_compat, "MENDS", (changed,))
    with pytest.raises(sf_private.SampleFactoryMismatch) as caught:
        sf_private.check_sample_factory()
    message = str(caught.value)
    assert "TensorDict._set_data_func: needed" in message and "has changed (source digest" in message
    assert "written for 0000000000000000" in message


def test_every_process_sample_factory_spawns_applies_the_mends():
    """The context sample-factory pickles into each process it spawns brings the mends with it."""
    from sample_factory.algo.utils.context import sf_global_context

    sf_compat.carry_into_spawned_processes()
    assert sf_compat.carried_into_spawned_processes()
    child = ("import json, pickle, sys\n"
             "assert 'llmexplore.agents.sf_compat' not in sys.modules\n"
             "pickle.loads(sys.stdin.buffer.read())\n"
             "from llmexplore.agents import sf_compat\n"
             "print(json.dumps({'needed': [m.name for m in sf_compat.MENDS if m.needed()],\n"
             "                  'applied': [m.name for m in sf_compat.MENDS if m.applied()],\n"
             "                  'problems': sf_compat.problems()}))\n")
    result = subprocess.run([sys.executable, "-c", child], input=pickle.dumps(sf_global_context()),
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    seen = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert seen["needed"] == seen["applied"] and seen["problems"] == []


def test_the_hub_stand_in_downloads_the_repository_sample_factory_asks_for(monkeypatch, tmp_path):
    import huggingface_hub

    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kwargs: calls.append(kwargs))
    sf_compat.HubRepository(str(tmp_path / "model"), "someone/appo-nethack")  # as load_from_hf calls it
    assert calls == [{"repo_id": "someone/appo-nethack", "local_dir": str(tmp_path / "model")}]


def test_without_sample_factory_the_error_names_the_install_command():
    child = ("import sys\n"
             "sys.modules['sample_factory'] = None\n"
             "try:\n"
             "    import llmexplore.agents.sf_private\n"
             "except Exception as exc:\n"
             "    print(type(exc).__name__, exc)\n")
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith("SampleFactoryMissing sample-factory, the RL engine"), result.stderr[-2000:]
    assert "pip install --no-deps sample-factory==2.1.1" in result.stdout


def test_the_wrapper_mend_reads_a_vector_envs_agents_through_sample_factorys_own_wrapper():
    """The batched path's vector env is wrapped by sample-factory's ``BatchedListToDictWrapper``;
    gymnasium >= 1.0 reads no attribute through a wrapper, so sample-factory's own lookup saw one agent
    and sized its buffers for one (rollout workers died on the first step)."""
    import gymnasium as gym
    from sample_factory.algo.utils import make_env

    class FourAgents(gym.Env):
        is_multiagent = True
        observation_space = gym.spaces.Dict({"x": gym.spaces.Box(0, 1, (2,))})
        action_space = gym.spaces.Discrete(3)

        def __init__(self):
            self.num_agents = 4

    wrapped = make_env.BatchedListToDictWrapper(FourAgents())
    assert sf_compat.get_multiagent_info(wrapped) == (True, 4)
    assert sf_compat.get_multiagent_info(make_env.BatchedMultiAgentWrapper(FourAgents())) == (True, 1)
    sf_compat.apply_all()
    assert make_env.BatchedVecEnv(FourAgents()).num_agents == 4
    mend = next(m for m in sf_compat.MENDS if m.name == "make_env.get_multiagent_info")
    assert mend.needed() == (int(gym.__version__.split(".")[0]) >= 1)


def test_without_huggingface_hub_the_hub_mend_is_not_needed_and_training_checks_pass(monkeypatch):
    """An offline GPU machine may carry only what training needs; sample-factory's training never imports the
    hub, so its absence must not stop a run (the rehearsal of tests/perf/gpu_sampling.sh found it did)."""
    import builtins

    real_import = builtins.__import__

    def no_hub(name, *args, **kwargs):
        if name == "huggingface_hub" or name.startswith("huggingface_hub."):
            raise ImportError("No module named 'huggingface_hub'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_hub)
    hub_mend = next(mend for mend in sf_compat.MENDS if mend.name == "huggingface_hub.Repository")
    assert hub_mend.needed() is False
    assert "huggingface_hub.Repository" not in sf_compat.apply_all()
    assert not any(line.startswith("huggingface_hub") for line in sf_compat.problems())
