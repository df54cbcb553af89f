"""MiniHack's levels compiled without its shell script (issue 54: MiniHack's resets dominate its training):
the same level archive byte for byte, the same seeded episodes, and a failing compiler is an error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmexplore.envs import make_adapter
from llmexplore.envs.minihack import compat, level_patch
from llmexplore.envs.minihack.adapter import make_minihack

pytest.importorskip("minigrid")


def _script_patch(env, des: str) -> None:
    """MiniHack's own patcher (its class's method, which runs the shell script)."""
    type(env)._patch_nhdat(env, des)


def _nhdat(env) -> bytes:
    return (Path(env.nethack._vardir) / "nhdat").read_bytes()


def test_the_archive_is_the_scripts_byte_for_byte_for_generated_and_named_levels():
    env = make_minihack("MiniHack-MultiRoom-N2-v0", observation_keys=("chars",))
    try:
        assert level_patch.install(env) is True
        for layout_seed in range(3):  # three MultiRoom layouts, as resets draw them
            env.minigrid_env.reset(seed=layout_seed)
            des = env.get_env_desc()
            _script_patch(env, des)
            by_script = _nhdat(env)
            env._patch_nhdat(des)
            assert _nhdat(env) == by_script
        for named in ("corridor2.des", "closed_door.des"):  # a file under MiniHack's dat folder, by name
            _script_patch(env, named)
            by_script = _nhdat(env)
            env._patch_nhdat(named)
            assert _nhdat(env) == by_script
    finally:
        env.close()


def test_seeded_multiroom_episodes_are_those_of_minihacks_own_patcher():
    """Two adapters' envs, one with MiniHack's script (the patcher taken back out), the same seed and actions:
    every observation of five episodes is equal, so the levels and their distribution are unchanged."""
    adapter = make_adapter("minihack:multiroom-n2")
    fast, slow = adapter.make_env(seed=3), adapter.make_env(seed=3)
    del slow.minihack._patch_nhdat  # the instance's patcher gone: the class's script is used again
    actions = np.random.default_rng(0).integers(0, fast.action_space.n, 400)
    try:
        for episode in range(5):
            obs_fast, _ = fast.reset()
            obs_slow, _ = slow.reset()
            for key in obs_fast:
                np.testing.assert_array_equal(obs_fast[key], obs_slow[key], err_msg=f"episode {episode} {key}")
            for action in actions[:80]:
                obs_fast, reward_fast, terminated, truncated, _ = fast.step(int(action))
                obs_slow, reward_slow, *ends_slow, _ = slow.step(int(action))
                for key in obs_fast:
                    np.testing.assert_array_equal(obs_fast[key], obs_slow[key], err_msg=f"episode {episode} {key}")
                assert (reward_fast, terminated, truncated) == (reward_slow, *ends_slow)
                if terminated or truncated:
                    break
    finally:
        fast.close()
        slow.close()


def test_a_level_that_does_not_compile_raises_naming_the_compiler():
    env = make_minihack("MiniHack-MultiRoom-N2-v0", observation_keys=("chars",))
    try:
        level_patch.install(env)
        with pytest.raises(RuntimeError, match="lev_comp failed"):
            env._patch_nhdat('MAZE: "mylevel", \' \'\nTHIS IS NOT A LEVEL\n')
        with pytest.raises(FileNotFoundError, match="nowhere.des"):
            env._patch_nhdat("nowhere.des")
    finally:
        env.close()


def test_another_minihack_version_keeps_its_own_script(monkeypatch):
    env = make_minihack("MiniHack-MultiRoom-N2-v0", observation_keys=("chars",))
    try:
        monkeypatch.setattr(compat, "MINIHACK_VERSION", "1.0.3")
        del env._patch_nhdat
        assert level_patch.install(env) is False
        assert "_patch_nhdat" not in vars(env)
    finally:
        env.close()
