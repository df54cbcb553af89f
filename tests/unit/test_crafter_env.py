"""Crafter adapter: stats in Crafter's own format, the score protocol, the text view."""

from __future__ import annotations

import json

import crafter
import numpy as np
import pytest

from llmexplore.envs import make_adapter
from llmexplore.envs.crafter import stats
from llmexplore.envs.crafter.adapter import CrafterEnv
from llmexplore.envs.crafter.text import caption


def test_episode_rows_match_crafters_own_recorder(tmp_path):
    """Crafter's StatsRecorder sits inside our env and records the very same episodes.

    (Two separately created Crafter envs do not replay identically even with one seed:
    Crafter despawns creatures picked from a set ordered by object ids.)
    """
    ours = CrafterEnv()
    ours.seed_episodes(5)
    ours.crafter = crafter.Recorder(ours.crafter, tmp_path, save_stats=True, save_video=False, save_episode=False)
    ours.reset()
    rng = np.random.default_rng(0)
    rows = []
    for a in rng.integers(0, 17, size=1500):
        _, _, terminated, truncated, info = ours.step(int(a))
        if terminated or truncated:
            rows.append(info["episode_extra_stats"])
            ours.reset()
    expected = [json.loads(line) for line in (tmp_path / "stats.jsonl").read_text().splitlines()]
    assert len(rows) == len(expected) > 2
    for ours_row, theirs in zip(rows, expected):
        assert {k: ours_row[k] for k in theirs} == theirs
        assert set(stats.ACHIEVEMENT_KEYS) <= set(ours_row)


def test_reward_free_gives_zero_reward_but_records_crafters_reward():
    env = CrafterEnv(reward=False)
    env.reset(seed=1)
    rewards = []
    rng = np.random.default_rng(1)
    while True:
        _, r, terminated, truncated, info = env.step(int(rng.integers(17)))
        rewards.append(r)
        if terminated or truncated:
            break
    assert set(rewards) == {0.0}
    assert "reward" in info["episode_extra_stats"]
    assert info["episode_extra_stats"]["return"] == 0.0


def test_score_formula():
    assert stats.score_from_rates(np.zeros(22)) == pytest.approx(0.0)
    assert stats.score_from_rates(np.full(22, 100.0)) == pytest.approx(100.0)
    rates = np.array([50.0] + [0.0] * 21)
    assert stats.score_from_rates(rates) == pytest.approx(np.exp(np.log(51) / 22) - 1)
    with pytest.raises(ValueError):
        stats.score_from_rates(np.full(22, 150.0))


def test_budget_by_running_sum_of_lengths():
    episodes = [{"length": 400}, {"length": 400}, {"length": 400}]
    assert len(stats.within_budget_by_length(episodes, 800)) == 2
    assert len(stats.within_budget_by_length(episodes, 799)) == 1


def test_caption_lists_view_facing_inventory_and_low_vitals():
    obs = {
        "local_semantic": np.array([[2, 6, 14], [13, 2, 2]], dtype=np.uint8),  # grass, tree, cow, player
        "facing": np.array([6], dtype=np.uint8),
        "inventory": np.array([9, 3, 9, 9, 0, 2] + [0] * 10, dtype=np.float32),
    }
    text = caption(obs)
    assert "You see cow, grass, tree." in text
    assert "You face tree." in text
    assert "wood (2)" in text
    assert "hungry" in text and "hurt" not in text and "player" not in text


def test_adapter_caption_from_a_real_observation():
    adapter = make_adapter("crafter:reward")
    env = adapter.make_env(seed=3)
    obs, _ = env.reset()
    assert adapter.caption(obs).startswith("You see ")


def test_a_seed_replays_exactly_across_env_instances():
    def trajectory(seed: int) -> list[bytes]:
        env = CrafterEnv()
        env.reset(seed=seed)
        rng = np.random.default_rng(0)
        frames = []
        for _ in range(600):
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(17)))
            frames.append(obs["image"].tobytes() + obs["local_semantic"].tobytes())
            if terminated or truncated:
                env.reset()
        return frames

    assert trajectory(11) == trajectory(11)
