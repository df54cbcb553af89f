"""NetHack tasks: rewards and termination on scripted and constructed situations."""

from __future__ import annotations

import numpy as np
import pytest
from nle import nethack

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.nethack import tasks
from llmexplore.envs.nethack.adapter import NetHackEnv, count_kills
from llmexplore.envs.nethack.text import decode_message, encode_message, status_line
from tests.helpers.nethack_play import action_index, descend_once

#: games where the scripted walk usually reaches a '>' within budget. NetHack reads the date
#: (luck on a full moon, a new moon, Friday the 13th), which changes the rolls of a game, so on
#: some days a seed's walk ends elsewhere: the tests use the first three that reach the stairs today.
STAIRCASE_CANDIDATES = (18, 30, 38, 49, 50, 1, 2, 3)


def _walk(task: str, seed: int):
    """(env, result of the '>' press or None) of the scripted walk on one seed."""
    env = NetHackEnv(task, extra_keys=("chars",))
    obs, _ = env.reset(seed=seed)
    return env, descend_once(env, obs, np.random.default_rng(seed))


@pytest.fixture(scope="module")
def staircase_seeds() -> list[int]:
    found = []
    for seed in STAIRCASE_CANDIDATES:
        env, result = _walk("staircase", seed)
        env.close()
        if result is not None:
            found.append(seed)
        if len(found) == 3:
            return found
    pytest.fail(f"the scripted walk reached the stairs on only {found} of the seeds {STAIRCASE_CANDIDATES}")


def _observation(env: NetHackEnv, message: str = "", dlevel: int = 1, condition: int = 0,
                 neighbour_glyph: int | None = None) -> tuple:
    """A raw NLE observation tuple with chosen message, level, condition and neighbour."""
    raw = [np.array(a, copy=True) for a in env.nle.last_observation]
    raw[env.nle._message_index] = encode_message(message)
    bl = raw[env.nle._blstats_index]
    bl[nethack.NLE_BL_DLEVEL] = dlevel
    bl[nethack.NLE_BL_CONDITION] = condition
    bl[nethack.NLE_BL_X], bl[nethack.NLE_BL_Y] = 10, 10
    glyphs = raw[env.nle._glyph_index]
    glyphs[:] = nethack.GLYPH_CMAP_OFF
    if neighbour_glyph is not None:
        glyphs[11, 11] = neighbour_glyph
    return tuple(raw)


@pytest.fixture
def make_env():
    envs = []

    def make(task: str, **kw) -> NetHackEnv:
        env = NetHackEnv(task, **kw)
        env.reset(seed=0)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def test_score_reward_is_score_delta_with_frozen_time_penalty(make_env):
    env = make_env("score")
    obs, *_ = env.step(0)
    # MORE (index 0) does not advance game time: only the -0.01 penalty applies
    before = obs["blstats"][nethack.NLE_BL_SCORE]
    obs, reward, terminated, truncated, _ = env.step(0)
    assert obs["blstats"][nethack.NLE_BL_SCORE] == before
    assert reward == pytest.approx(-0.01)
    assert not terminated and not truncated


def test_score_episode_ends_with_stats(make_env):
    env = make_env("score", max_episode_steps=50)
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            break
    assert terminated or truncated
    stats = info["episode_extra_stats"]
    assert stats["length"] <= 50
    for key in ("return", "score", "gold", "kills", "depth", "experience_level", "progression"):
        assert key in stats


def test_count_kills_counts_the_players_announced_kills_only():
    assert count_kills(b"You kill the newt!") == 1
    assert count_kills(b"You destroy the gnome zombie!") == 1
    assert count_kills(b"You kill it!  You kill the jackal!\0\0") == 2
    assert count_kills(b"The little dog kills the newt.") == 0
    assert count_kills(b"You killed it earlier.") == 0
    assert count_kills(b"The newt is killed!") == 0
    assert count_kills(b"") == 0


def test_kills_stat_adds_up_visible_and_skipped_messages():
    """Random play on seed 4 kills 7 monsters; one kill message hides behind --More--."""
    env = NetHackEnv("score")
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    visible = skipped = 0
    gold = 0
    while True:
        obs, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        visible += count_kills(obs["message"].tobytes())
        skipped += sum(count_kills(m) for m in env.nle.more_messages)
        gold = int(obs["blstats"][nethack.NLE_BL_GOLD]) if obs["blstats"][nethack.NLE_BL_HPMAX] > 0 else gold
        if terminated or truncated:
            break
    env.close()
    stats = info["episode_extra_stats"]
    assert skipped >= 1 and visible >= 1
    assert stats["kills"] == visible + skipped
    assert stats["gold"] == gold > 0


@pytest.mark.parametrize("which", range(3))
def test_staircase_pays_50_and_ends_with_descend_message_kept(staircase_seeds, which):
    env, result = _walk("staircase", staircase_seeds[which])
    assert result is not None, "scripted walk did not reach the stairs"
    obs, reward, terminated, truncated, info = result
    assert "You descend the stairs" in decode_message(obs["message"])
    assert reward == 50.0 and terminated
    assert info["episode_extra_stats"]["success"] == 1
    assert info["episode_extra_stats"]["depth"] == 2
    env.close()


def test_score_task_keeps_descend_message_too(staircase_seeds):
    env, result = _walk("score", staircase_seeds[0])
    obs, reward, terminated, *_ = result
    assert "You descend the stairs" in decode_message(obs["message"])
    assert not terminated
    assert obs["blstats"][nethack.NLE_BL_DEPTH] == 2
    env.close()


@pytest.mark.parametrize("task,target", [("staircase", 2), ("staircase-lvl3", 3), ("staircase-lvl4", 4)])
def test_staircase_success_needs_message_and_target_level(make_env, task, target):
    env = make_env(task)
    nle = env.nle
    assert nle._is_episode_end(_observation(env, "You descend the stairs.", dlevel=target - 1)) == 0
    assert nle._is_episode_end(_observation(env, "You see here a dagger.", dlevel=target)) == 0
    status = nle._is_episode_end(_observation(env, "You descend the stairs.", dlevel=target))
    assert status == tasks.StepStatus.TASK_SUCCESSFUL
    assert nle._reward_fn(None, 0, None, status) == 50.0


@pytest.mark.parametrize("task,target", [("staircase-lvl3-continual", 3), ("staircase-lvl4-continual", 4)])
def test_continual_pays_once_and_does_not_end(make_env, task, target):
    env = make_env(task)
    nle = env.nle
    success = _observation(env, "You descend the stairs.", dlevel=target)
    assert nle._is_episode_end(success) == tasks.StepStatus.RUNNING
    assert nle._reward_fn(None, 0, None, 0) == 50.0
    assert nle._is_episode_end(success) == tasks.StepStatus.RUNNING
    assert nle._reward_fn(None, 0, None, 0) == 0.0  # paid once per episode
    env.reset()
    assert nle._reward_fn(None, 0, None, 0) == 0.0  # a new episode starts unpaid


def test_oracle_success_when_oracle_is_adjacent(make_env):
    env = make_env("oracle")
    nle = env.nle
    assert nle._is_episode_end(_observation(env)) == tasks.StepStatus.RUNNING
    status = nle._is_episode_end(_observation(env, neighbour_glyph=nle.oracle_glyph))
    assert status == tasks.StepStatus.TASK_SUCCESSFUL
    assert nle._reward_fn(None, 0, None, status) == 50.0


def test_oracle_sober_refuses_hallucination_even_with_other_conditions(make_env):
    env = make_env("oracle-sober")
    nle = env.nle
    hallu = nethack.BL_MASK_HALLU
    for condition in (hallu, hallu | nethack.BL_MASK_BLIND, hallu | nethack.BL_MASK_CONF):
        obs = _observation(env, condition=condition, neighbour_glyph=nle.oracle_glyph)
        assert nle._is_episode_end(obs) == tasks.StepStatus.RUNNING, condition
    sober = _observation(env, condition=nethack.BL_MASK_BLIND, neighbour_glyph=nle.oracle_glyph)
    assert nle._is_episode_end(sober) == tasks.StepStatus.TASK_SUCCESSFUL
    # the unsober Oracle task accepts a hallucinated Oracle
    plain = make_env("oracle")
    obs = _observation(plain, condition=hallu, neighbour_glyph=plain.nle.oracle_glyph)
    assert plain.nle._is_episode_end(obs) == tasks.StepStatus.TASK_SUCCESSFUL


def test_fixed_eat_action_answers_with_first_listed_item(make_env):
    env = make_env("score")
    obs, *_ = env.step(action_index(env, "e"))
    message = decode_message(obs["message"])
    assert message.startswith("What do you want to eat?"), message
    first = message.split("[")[1][0]
    assert env.nle._translate_action(action_index(env, "y")) == ord(first)
    assert env.nle._translate_action(action_index(env, "k")) == tasks.ASCII_ESC
    obs, *_ = env.step(action_index(env, "y"))
    assert not decode_message(obs["message"]).startswith("What do you want to eat?")


def test_extended_action_set_has_28_actions():
    assert make_adapter("nethack:score-extended").make_env().action_space.n == 28
    assert make_adapter("nethack:score").make_env().action_space.n == 23


def test_action_names_are_unique_and_name_the_far_moves():
    """NLE names a one-step direction and its shifted (far) form alike; a replay must tell them apart."""
    for task in ("nethack:score", "nethack:score-extended"):
        names = make_adapter(task).make_env().action_names
        assert len(names) == len(set(names)), names
    names = make_adapter("nethack:score").make_env().action_names
    assert "n" in names and "far n" in names


def test_seeded_episodes_replay_and_differ():
    def first_messages(seed: int, episodes: int = 2) -> list[list[str]]:
        env = NetHackEnv("score")
        env.reset(seed=seed)
        out = []
        for _ in range(episodes):
            rng = np.random.default_rng(1)
            msgs = []
            for _ in range(40):
                obs, *_ = env.step(int(rng.integers(env.action_space.n)))
                msgs.append(decode_message(obs["message"]) + str(obs["blstats"][:2]))
            out.append(msgs)
            env.reset()
        env.close()
        return out

    a, b = first_messages(7), first_messages(7)
    assert a == b
    assert a[0] != a[1]


def test_caption_is_the_decoded_message(make_env):
    adapter = make_adapter(get_task("nethack:score"))
    obs = {"message": encode_message("You kill the newt!"), "blstats": np.zeros(27)}
    assert adapter.caption(obs) == "You kill the newt!"


def test_progression_uses_balrog_table(shared_data):
    from llmexplore.envs.nethack.progression import ProgressionTracker, load_table

    table = load_table(str(shared_data / "balrog" / "achievements.json"))
    tracker = ProgressionTracker(table)
    tracker.update(depth=3, experience_level=1)
    tracker.update(depth=2, experience_level=5)
    expected = 100 * max(table["Dlvl:3"], table["Xp:5"], table["Dlvl:2"], table["Xp:1"])
    assert tracker.percent == pytest.approx(expected)


def test_missing_balrog_table_is_a_clear_error(monkeypatch, tmp_path):
    from llmexplore.envs.nethack.progression import load_table
    from llmexplore.errors import DataError

    monkeypatch.setenv("LLMEXPLORE_BALROG_TABLE", str(tmp_path / "nope.json"))
    load_table.cache_clear()
    with pytest.raises(DataError, match="BALROG"):
        load_table()
    load_table.cache_clear()


def test_crop_is_centred_and_blank_beyond_the_edges():
    from llmexplore.envs.nethack.adapter import CROP, crop_around

    chars = np.arange(21 * 79, dtype=np.int64).reshape(21, 79) % 251
    chars = chars.astype(np.uint8)
    inner = crop_around(chars, 40, 10)
    assert inner.shape == (CROP, CROP) and inner[4, 4] == chars[10, 40]
    corner = crop_around(chars, 0, 0)
    assert corner[4, 4] == chars[0, 0] and corner[0, 0] == ord(" ") and corner[8, 8] == chars[4, 4]
    edge = crop_around(chars, 78, 20)
    assert edge[4, 4] == chars[20, 78] and edge[8, 8] == ord(" ")


def test_status_line_names_hunger_as_nethack_does(make_env):
    """A new game is "Not Hungry" (u.uhs 1), which the status line leaves out; 2 is "Hungry"."""
    env = make_env("score")
    obs, _ = env.reset(seed=0)
    blstats = obs["blstats"].copy()
    assert int(blstats[nethack.NLE_BL_HUNGER]) == 1
    assert "Hungry" not in status_line(blstats)
    blstats[nethack.NLE_BL_HUNGER] = 2
    assert status_line(blstats).endswith(" Hungry")
    blstats[nethack.NLE_BL_HUNGER] = 0
    assert status_line(blstats).endswith(" Satiated")
