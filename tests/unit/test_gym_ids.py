"""Every task has a gymnasium id; gymnasium.make builds NetHack, Crafter and Housekeep tasks."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium
import pytest

import llmexplore.envs as envs
from tests.conftest import REPO, SHARED_DATA


def test_every_task_has_a_unique_registered_id():
    assert set(envs.GYM_IDS) == set(envs.task_names())
    assert len(set(envs.GYM_IDS.values())) == len(envs.GYM_IDS)
    for task, env_id in envs.GYM_IDS.items():
        assert gymnasium.spec(env_id).kwargs == {"task": task}
    assert envs.GYM_IDS["nethack:score"] == "llmexplore/NetHackScore-v0"
    assert envs.GYM_IDS["crafter:reward-free"] == "llmexplore/CrafterRewardFree-v0"


def _play(env_id: str, steps: int = 5):
    env = gymnasium.make(env_id)
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs) and isinstance(float(reward), float)
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["llmexplore/NetHackScore-v0", "llmexplore/CrafterRewardFree-v0"])
def test_make_nethack_and_crafter(env_id):
    pytest.importorskip("nle" if "NetHack" in env_id else "crafter")
    _play(env_id)


@pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")
def test_make_housekeep():
    _play("llmexplore/HousekeepMerom1-v0")


def test_module_prefix_needs_no_prior_import():
    """``gymnasium.make("llmexplore.envs:<id>")`` imports the suite itself."""
    code = ("import gymnasium; env = gymnasium.make('llmexplore.envs:llmexplore/CrafterReward-v0'); "
            "env.reset(seed=1); print(env.spec.id)")
    pytest.importorskip("crafter")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "llmexplore/CrafterReward-v0"
