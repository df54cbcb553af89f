"""ELLM on Housekeep: the oracle's placement answers, suggestions and the published pick/place rewards."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.housekeep.policies import Oracle
from llmexplore.errors import ConfigError
from llmexplore.lm import make_lm
from llmexplore.lm.config import LMConfig
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import HousekeepPlacement
from llmexplore.methods import MethodContext, get_method, parse_options
from llmexplore.methods.ellm import shared
from llmexplore.methods.ellm.wrapper import GOAL_KEY, REWARD_KEY
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.skipif(not (SHARED_DATA / "housekeep").is_dir(), reason="needs ../shared/data/housekeep")
TASK = "housekeep:ihlen_1"
ELLM = get_method("ellm")
P = LMConfig().sampling()


@pytest.fixture(scope="module")
def adapter():
    return make_adapter(TASK)


@pytest.fixture(scope="module")
def questions(adapter):
    raw = np.load(SHARED_DATA / "housekeep" / "amt_data" / "data.npy", allow_pickle=True).item()
    pairs = [p.split("|") for p in raw["room_receptacles"][::9]]
    return [(o.replace("_", " "), r.replace("_", " "), room.replace("_", " "))
            for o, (room, r) in itertools.product(raw["objects"][::13], pairs)]


def test_the_oracle_answers_placements_as_the_annotators_do(adapter, questions):
    truth = adapter.judge()
    result = ask(OracleLM(), HousekeepPlacement(), questions, P)
    assert result.unknown == 0 and result.labels == [truth(*q) for q in questions]
    assert 0 < sum(result.labels) < len(questions)


def test_a_noisy_oracle_is_another_model_and_flips_the_judges_answers(adapter, questions):
    config = LMConfig(cache=":memory:", options={"placement_noise": 0.3, "placement_seed": 4})
    with make_lm(config) as noisy:
        assert noisy.model_id != OracleLM().model_id  # so cached exact answers are never reused
        labels = ask(noisy, HousekeepPlacement(), questions, P).labels
    judge = adapter.judge(noise=0.3, seed=4)
    assert labels == [judge(*q) for q in questions]
    flipped = np.mean([a != b for a, b in zip(labels, ask(OracleLM(), HousekeepPlacement(), questions, P).labels)])
    assert 0.2 < flipped < 0.4
    with pytest.raises(ConfigError, match="unknown option"):
        make_lm(LMConfig(cache=":memory:", options={"noise": 0.3}))


def _expected_reward(env, action: int, placed: set[str], picked: set[int], known: set) -> tuple[str, float]:
    """ELLM's Housekeep reward of ``action`` from the world's ground truth (annotation goals)."""
    world = env.unwrapped.world
    vocab = env.unwrapped.vocab
    layout = world.layout
    correct = world.correct_now()
    if action < 12:
        return ("move" if action < world.num_rooms else "failed"), 0.0
    if action < 44:
        return ("move" if action - 12 < len(layout.room_receptacles[world.room]) else "failed"), 0.0
    if action < 54:  # pick object j
        j = action - 44
        if world.held >= 0 or j >= world.num_objects or world.at < 0 or world.location[j] != world.at:
            return "failed", -0.2
        name = vocab.object_name(int(world.category_ids[j]))
        suggested = not correct[j] and name not in placed
        first = j not in picked
        picked.add(j)
        return "pick", (2.5 if first else 0.0) if suggested else -0.25
    if world.held < 0 or world.at < 0 or not world.can_place(world.at, world.held):
        return "failed", -0.2
    j, r = world.held, world.at
    name = vocab.object_name(int(world.category_ids[j]))
    pair = (layout.room_types[layout.rec_room[r]], layout.rec_category[r])
    suggested = bool(world.goals[r, j]) and name not in placed and pair in known
    if suggested:
        placed.add(name)
    return "place", 2.5 if suggested else -0.25


def test_rewards_follow_elllms_housekeep_rules(tmp_path, adapter):
    """An oracle policy mixed with random actions: each step's reward matches the rules."""
    context = MethodContext(task=get_task(TASK), seed=0, run_dir=tmp_path, lm=LMConfig(cache=":memory:"))
    env = ELLM.wrap_env(adapter.make_env(seed=2), parse_options(ELLM, {}), context)
    policy, rng = Oracle(), np.random.default_rng(0)
    seen = {"pick": set(), "place": set(), "failed": set()}
    for episode in range(6):
        obs, _ = env.reset(seed=episode) if episode == 0 else env.reset()
        placed, picked = set(), set()
        layout = env.unwrapped.world.layout
        while True:
            world = env.unwrapped.world
            known = {(layout.room_types[layout.rec_room[r]], layout.rec_category[r])
                     for r in range(len(layout.rec_room)) if layout.rec_room[r] in world.visited_rooms}
            action = policy(env.unwrapped) if rng.random() < 0.7 else int(rng.integers(env.action_space.n))
            event, expected = _expected_reward(env, action, placed, picked, known)
            obs, _, terminated, truncated, info = env.step(action)
            assert info["event"] == event
            assert obs[REWARD_KEY][0] == pytest.approx(expected), (event, info.get("achieved"), env.goals)
            seen.setdefault(event, set()).add(expected)
            assert obs[GOAL_KEY].any() == bool(env.goals)
            if terminated or truncated:
                break
    assert {2.5, -0.25} <= seen["pick"] and {2.5, -0.25} <= seen["place"] and seen["failed"] == {0.0, -0.2}


def test_oracle_noise_needs_housekeep_and_the_oracle():
    resolve(RunSpec(method="ellm", task=TASK, method_options={"oracle_noise": 0.1}))
    with pytest.raises(ConfigError, match="oracle_noise"):
        resolve(RunSpec(method="ellm", task=TASK, method_options={"oracle_noise": 0.1},
                        lm={"backend": "openai", "base_url": "http://localhost:1/v1", "model": "m"}))


@pytest.fixture(autouse=True, scope="module")
def _drop_shared_objects():
    yield
    shared.clear()
