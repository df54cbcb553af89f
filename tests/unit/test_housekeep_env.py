"""Housekeep env: observations, Housekeep's reward rules, episode stats, seeding, captions."""

from __future__ import annotations

import numpy as np
import pytest

from llmexplore.envs import make_adapter
from llmexplore.envs.housekeep.env import HousekeepEnv
from llmexplore.envs.housekeep.policies import Oracle, random_policy, run_episode
from llmexplore.envs.housekeep.text import caption, read_view
from llmexplore.envs.housekeep.world import PLACE, go_receptacle, go_room, pick
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")
TASK = "housekeep:merom_1"  # a val scene with 200 episodes: quick to load


@pytest.fixture(scope="module")
def adapter():
    return make_adapter(TASK)


@pytest.fixture
def env(adapter) -> HousekeepEnv:
    return adapter.make_env(seed=3)


def walk_to(world, receptacle: int) -> list[int]:
    actions = []
    room = world.room_of_receptacle(receptacle)
    if room != world.room:
        actions.append(go_room(room))
    actions.append(go_receptacle(int(world.layout.rec_slot[receptacle])))
    return actions


def do(env, actions):
    """Step through actions; return the rewards and the last step's info."""
    rewards, info = [], {}
    for a in actions:
        _, r, _, truncated, info = env.step(a)
        rewards.append(r)
        assert not truncated
    return rewards, info


def test_observations_stay_in_the_space_and_show_only_this_room(env):
    space = env.observation_space
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(600):
        assert space.contains(obs)
        world = env.world
        visible = np.flatnonzero(obs["objects"][: world.num_objects] > 0)
        expected = set(np.flatnonzero(world.object_room == world.room)) | ({world.held} if world.held >= 0 else set())
        assert set(visible) == expected
        members = world.layout.room_receptacles[world.room]
        assert (obs["receptacles"][: len(members)] == world.layout.rec_category_ids[members]).all()
        assert (obs["receptacles"][len(members):] == 0).all()
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()


def test_housekeep_reward_rules_and_stats(adapter):
    env = adapter.make_env(seed=0)
    env.reset(options={"episode": 7})
    world = env.world
    misplaced = [int(j) for j in np.flatnonzero(~world.correct_at_start)]
    placed = [int(j) for j in np.flatnonzero(world.correct_at_start)]
    j, k = misplaced[:2]
    correct_j = int(np.flatnonzero(world.goals[:, j])[0])

    rewards, info = do(env, walk_to(world, int(world.location[j])) + [pick(j)])
    assert rewards[-1] == 2.5 and set(rewards[:-1]) == {0.0}  # first pick of a misplaced object
    assert info["achieved"] == "pick " + adapter.vocab.object_name(int(world.category_ids[j])).replace("_", " ")
    wrong = next(r for r in range(len(world.layout.rec_room)) if not world.goals[r, j] and world.can_place(r, j))
    rewards, info = do(env, walk_to(world, int(wrong)) + [PLACE])
    assert rewards[-1] == pytest.approx(-0.25) and info["event"] == "place"  # placed on a wrong receptacle
    rewards, _ = do(env, [pick(j)])
    assert rewards == [0.0]  # picking the same misplaced object again
    rewards, info = do(env, walk_to(world, correct_j) + [PLACE])
    assert rewards[-1] == 0.0 and world.correct_now()[j]  # correct, but not on its first pick
    assert info["achieved"].startswith("place ") and " on " in info["achieved"]

    rewards, _ = do(env, walk_to(world, int(world.location[k])) + [pick(k)])
    assert rewards[-1] == 2.5
    correct_k = next(int(r) for r in np.flatnonzero(world.goals[:, k]) if world.can_place(int(r), k))
    rewards, _ = do(env, walk_to(world, correct_k) + [PLACE])
    assert rewards[-1] == 2.5  # first pick, placed correctly

    m = placed[0]
    home = int(world.location[m])
    rewards, _ = do(env, walk_to(world, home) + [pick(m)])
    assert rewards[-1] == pytest.approx(-0.25)  # took a correctly placed object
    rewards, _ = do(env, [PLACE])
    assert rewards == [0.0]  # put back: correct again, no reward

    rewards, info = do(env, [PLACE, pick(world.num_objects), go_room(11), go_receptacle(31)])
    assert rewards == [pytest.approx(-0.2), pytest.approx(-0.2), 0.0, 0.0] and info["event"] == "failed"

    oracle, total = Oracle(), 0.0
    while True:
        _, r, terminated, truncated, info = env.step(oracle(env))
        total += r
        if terminated or truncated:
            break
    assert terminated
    stats = info["episode_extra_stats"]
    assert stats["rearrange_success"] == 1.0 and stats["episode_success"] == 1
    assert stats["objects_fixed"] == stats["misplaced_start"] == len(misplaced)
    assert stats["objects_displaced"] == 0 and stats["misplaced_end"] == 0
    assert stats["failed_actions"] == 4 and stats["misplaced_found"] == len(misplaced)
    assert stats["return"] == pytest.approx(stats["reward"])


def test_displacing_a_correct_object_is_counted(adapter):
    env = HousekeepEnv(adapter.load_scenes(), adapter.vocab, max_steps=12)
    env.reset(options={"episode": 3})
    world = env.world
    m = int(np.flatnonzero(world.correct_at_start)[0])
    wrong = next(r for r in range(len(world.layout.rec_room)) if not world.goals[r, m] and world.can_place(r, m))
    for a in walk_to(world, int(world.location[m])) + [pick(m)] + walk_to(world, wrong) + [PLACE]:
        _, _, _, truncated, info = env.step(a)
    while not truncated:
        _, _, _, truncated, info = env.step(go_room(0))
    stats = info["episode_extra_stats"]
    assert stats["length"] == 12 and stats["objects_displaced"] == 1 and stats["objects_fixed"] == 0
    assert stats["rearrange_success"] == pytest.approx(1 - (stats["misplaced_start"] + 1) / stats["objects"])


def test_reward_free_pays_nothing_but_records_the_reward(adapter):
    env = HousekeepEnv(adapter.load_scenes(), adapter.vocab, reward=False)
    env.seed_episodes(1)
    oracle = Oracle()
    env.reset()
    rewards = []
    while True:
        _, r, terminated, truncated, info = env.step(oracle(env))
        rewards.append(r)
        if terminated or truncated:
            break
    assert set(rewards) == {0.0}
    assert info["episode_extra_stats"]["return"] == 0.0 and info["episode_extra_stats"]["reward"] > 10


def test_a_seed_replays_exactly_and_object_slots_are_shuffled(adapter):
    def trajectory(seed: int):
        env = adapter.make_env(seed=seed)
        obs, _ = env.reset()
        rng = np.random.default_rng(0)
        out = []
        for _ in range(400):
            obs, r, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            out.append((b"".join(v.tobytes() for v in obs.values()), r))
            if terminated or truncated:
                obs, _ = env.reset()
        return out

    assert trajectory(5) == trajectory(5)
    assert trajectory(5) != trajectory(6)

    env = adapter.make_env(seed=0)
    leading = 0
    for _ in range(100):
        env.reset()
        misplaced = ~env.world.correct_at_start
        leading += bool(misplaced[: misplaced.sum()].all())  # the file lists misplaced objects first
    assert leading < 50


def test_caption_is_rebuilt_from_the_observation(adapter, env):
    obs, _ = env.reset(options={"episode": 0})
    world = env.world
    j = int(np.flatnonzero(~world.correct_at_start)[0])
    for a in walk_to(world, int(world.location[j])):
        obs, *_ = env.step(a)
    name = adapter.vocab.object_name(int(world.category_ids[j])).replace("_", " ")
    receptacle = world.layout.rec_category[world.location[j]].replace("_", " ")
    text = adapter.caption(obs)
    assert text.startswith(f"You are at the {receptacle} in ")
    assert name in text and "holding" not in text
    obs, *_ = env.step(pick(j))
    assert adapter.caption(obs).endswith(f"holding {'an' if name[0] in 'aeiou' else 'a'} {name}.")
    view = read_view(obs, adapter.vocab)
    assert view.held == adapter.vocab.object_name(int(world.category_ids[j]))
    assert view.room_type == world.layout.room_types[world.room]
    assert caption(obs, adapter.vocab) == adapter.caption(obs)


def test_random_policy_rarely_changes_anything(adapter):
    env = adapter.make_env(seed=0)
    policy = random_policy(0)
    rows = [run_episode(env, policy) for _ in range(30)]
    assert all(r["length"] == env.max_steps for r in rows)
    assert np.mean([r["objects_fixed"] for r in rows]) < 0.5
