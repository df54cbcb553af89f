"""ELLM on Crafter: success inference, suggestions through the LM layer, once-per-episode rewards
above the threshold, the reward carried over episode ends, and the learner reading it."""

from __future__ import annotations

import crafter
import numpy as np
import pytest
import torch

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.crafter.adapter import ACTIONS, CrafterEnv
from llmexplore.envs.crafter.text import INVENTORY
from llmexplore.envs.crafter.oracle import RULES
from llmexplore.lm.config import LMConfig
from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options
from llmexplore.methods.ellm import shared
from llmexplore.methods.ellm.crafter_events import (
    ACHIEVEMENT_CAPTIONS,
    NOT_ACTIONS,
    successful_actions,
    with_equivalents,
)
from llmexplore.methods.ellm.wrapper import GOAL_KEY, REWARD_KEY

NOOP, DO, SLEEP = ACTIONS.index("noop"), ACTIONS.index("do"), ACTIONS.index("sleep")
ELLM = get_method("ellm")


@pytest.fixture
def context(tmp_path):
    return MethodContext(task=get_task("crafter:reward-free"), seed=0, run_dir=tmp_path, lm=LMConfig(cache=":memory:"))


def wrap(context, threshold=0.99, env=None, **options):
    opts = parse_options(ELLM, {"threshold": threshold, **options})
    return ELLM.wrap_env(env or make_adapter("crafter:reward-free").make_env(), opts, context)


def put_in_front(env, material: str) -> None:
    """Turn the cell the player faces into ``material`` (a real Crafter world, edited)."""
    game = env.unwrapped.crafter
    player = game._player
    target = tuple(np.array(player.pos) + np.array(player.facing))
    obj = game._world[target][1]
    if obj is not None:
        game._world.remove(obj)
    game._world[target] = material


def test_every_achievement_but_waking_up_names_an_action_the_oracle_can_suggest():
    assert set(ACHIEVEMENT_CAPTIONS) | set(NOT_ACTIONS) == set(crafter.constants.achievements)
    assert not set(ACHIEVEMENT_CAPTIONS) & set(NOT_ACTIONS)
    oracle_goals = {goal for goal, *_ in RULES}
    assert set(ACHIEVEMENT_CAPTIONS.values()) | {"sleep"} <= oracle_goals
    assert with_equivalents({"eat cow"}) == {"eat cow", "attack cow"}


def test_success_comes_from_counters_and_falling_asleep_from_energy():
    full, tired = np.full(len(INVENTORY), 9.0), np.full(len(INVENTORY), 9.0)
    tired[INVENTORY.index("energy")] = 5
    before = {name: 0 for name in crafter.constants.achievements}
    assert successful_actions("do", full, before, {**before, "collect_wood": 1}) == ["chop tree"]
    assert successful_actions("do", full, before, {**before, "wake_up": 1}) == []
    assert successful_actions("place_table", full, {**before, "place_table": 2}, {**before, "place_table": 3}) \
        == ["place crafting table"]
    assert successful_actions("sleep", tired, before, before) == ["sleep"]
    assert successful_actions("sleep", full, before, before) == []
    assert successful_actions("noop", tired, before, before) == []


def test_real_crafter_steps_agree_with_the_counters():
    """Random play in stock Crafter: every counter that rises is reported, nothing else."""
    env = make_adapter("crafter:reward-free").make_env(seed=5)
    obs, _ = env.reset(seed=5)
    before = {}
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(1500):
        action = int(rng.integers(len(ACTIONS)))
        inventory = obs["inventory"].copy()
        obs, _, terminated, truncated, info = env.step(action)
        after = info["achievements"]
        risen = {ACHIEVEMENT_CAPTIONS[k] for k in ACHIEVEMENT_CAPTIONS if after[k] > before.get(k, 0)}
        got = successful_actions(ACTIONS[action], inventory, before, after)
        assert set(got) - {"sleep"} == risen
        seen += len(risen)
        before = after
        if terminated or truncated:
            obs, _ = env.reset()
            before = {}
    assert seen >= 3


def test_a_goal_is_rewarded_once_per_episode_and_only_above_the_threshold(context):
    env = wrap(context)
    obs, _ = env.reset(seed=3)
    assert obs[GOAL_KEY].shape == (env.embedder.dim,) and obs[REWARD_KEY][0] == 0.0
    put_in_front(env, "tree")
    obs, *_ = env.step(NOOP)
    assert "chop tree" in env.goals  # the oracle sees the tree in the caption
    suggested = env.goals
    goal_vector = env.embedder.vectors(list(suggested)).mean(axis=0)
    assert np.allclose(obs[GOAL_KEY], goal_vector, atol=1e-6)
    obs, *_ = env.step(DO)
    assert obs[REWARD_KEY][0] > 0.99 and "chop tree" in env.achieved
    # the same success again: no longer suggested, no reward, whatever else is suggested
    put_in_front(env, "tree")
    env.step(NOOP)
    assert "chop tree" not in env.goals and env.goals
    obs, _, _, _, info = env.step(DO)
    assert info["achievements"]["collect_wood"] == 2 and obs[REWARD_KEY][0] == 0.0
    # a new episode forgets what was achieved
    env.reset()
    put_in_front(env, "tree")
    env.step(NOOP)
    obs, *_ = env.step(DO)
    assert obs[REWARD_KEY][0] > 0.99


def test_only_similarities_above_the_threshold_pay_and_count_as_achieved(context):
    env = wrap(context, threshold=0.99)
    env.reset(seed=3)

    def chop() -> tuple[list[str], float]:
        put_in_front(env, "tree")
        env.step(NOOP)
        goals = list(env.goals)
        obs, *_ = env.step(DO)
        return goals, float(obs[REWARD_KEY][0])

    goals, reward = chop()
    assert {"chop tree", "chop grass"} <= set(goals) and reward > 0.99
    assert env.achieved == {"chop tree"}  # "chop grass" is similar, but not above 0.99
    goals, reward = chop()
    similarity = env.embedder.similarity(["chop tree"], goals)[0]
    assert "chop tree" not in goals and 0.5 < similarity.max() < 0.99 and reward == 0.0
    env.threshold = 0.5  # now the closest other goal pays its similarity and is achieved
    goals, reward = chop()
    similarity = env.embedder.similarity(["chop tree"], goals)[0]
    assert reward == pytest.approx(float(similarity.max()), abs=1e-5)
    assert {g for g, s in zip(goals, similarity) if s > 0.5} <= env.achieved


def test_the_reward_of_an_episode_end_is_carried_by_the_reset_observation(context):
    env = wrap(context, env=CrafterEnv(reward=False, length=2))
    env.reset(seed=3)
    put_in_front(env, "tree")
    env.step(NOOP)
    obs, _, terminated, truncated, info = env.step(DO)
    assert truncated and obs[REWARD_KEY][0] > 0.99
    assert info["episode_extra_stats"]["ellm_goals_achieved"] == 1
    obs, _ = env.reset()
    assert obs[REWARD_KEY][0] > 0.99  # sample-factory keeps this observation in place of the last one
    obs, _ = env.reset()
    assert obs[REWARD_KEY][0] == 0.0


def test_the_learner_reads_the_reward_of_each_transition_from_the_next_observation(context):
    env = wrap(context)
    method = ELLM(parse_options(ELLM, {}), context, env.observation_space)
    obs = torch.zeros(2, 4, 1)
    obs[0, 1:, 0] = torch.tensor([0.0, 1.0, 0.5])
    batch = RewardBatch(obs={REWARD_KEY: obs}, actions=torch.zeros(2, 3), dones=torch.zeros(2, 3))
    assert torch.equal(method.reward(batch), torch.tensor([[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]]))
    assert ELLM.policy_keys == (GOAL_KEY,)


def test_env_copies_of_one_process_share_the_model_and_the_answers(context):
    a, b = wrap(context), wrap(context)
    assert a.embedder is b.embedder and a.suggester is b.suggester
    a.reset(seed=1)
    asked = a.suggester.asked
    b.reset(seed=1)  # the same first state: answered from the table
    assert a.suggester.asked == asked


def test_without_goal_conditioning_the_goal_key_is_zero(context):
    env = wrap(context, goal_conditioning=False)
    obs, _ = env.reset(seed=3)
    assert env.goals and not obs[GOAL_KEY].any()


@pytest.fixture(autouse=True, scope="module")
def _drop_shared_objects():
    yield
    shared.clear()


@pytest.mark.parametrize("health_coef", [0.0, 0.1])
def test_health_term_is_off_as_released_and_pays_health_changes_when_set(context, health_coef):
    """ELLM's code adds a health term (health change / 10) but zeroes it before use: off by default."""
    env = wrap(context, health_coef=health_coef)
    env.reset(seed=3)
    player = env.unwrapped.crafter._player
    player.health = 5  # a lost point or two, then a step in which health changes by a known amount
    env.step(NOOP)
    before = player.health
    player.health = before - 2
    obs, *_ = env.step(NOOP)
    change = player.health - before
    assert change != 0 and obs[REWARD_KEY][0] == pytest.approx(health_coef * change, abs=1e-6)
