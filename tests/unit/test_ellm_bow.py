"""ELLM-BoW (ONI's baseline): word-vector bags, the goal text, counts, and where it refuses to run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task
from llmexplore.envs.nethack.adapter import NetHackEnv
from llmexplore.envs.nethack.text import decode_message
from llmexplore.errors import ConfigError
from llmexplore.lm.templates import load_prompts
from llmexplore.methods import MethodContext, get_method, parse_options
from llmexplore.methods.ellm import shared
from llmexplore.methods.ellm.bow import REWARD_KEY, goal_text
from llmexplore.methods.ellm.embedding import default_model_path
from llmexplore.methods.ellm.word_vectors import WordPieceVectors, cosine

BOW = get_method("ellm-bow")


@pytest.fixture(scope="module")
def vectors():
    return WordPieceVectors(default_model_path())


def test_a_bag_is_the_sum_of_the_word_piece_rows(vectors):
    text = "You kill the newt!"
    ids = vectors.tokenizer.encode(text, add_special_tokens=False).ids
    words = [i for i in ids if vectors.tokenizer.id_to_token(i).isalnum()]
    assert vectors.tokens(text) == ["you", "kill", "the", "newt"]  # punctuation left out
    assert np.allclose(vectors.bag(text), vectors.table[words].sum(axis=0))
    assert not vectors.bag("").any() and cosine(vectors.bag(""), vectors.bag(text)) == 0.0
    assert cosine(vectors.bag("gold"), vectors.bag("gold coins")) > cosine(vectors.bag("gold"), vectors.bag("door"))


def test_the_goal_is_the_motif_instruction_in_our_words():
    goals = load_prompts().table("motif_preference", "goals")
    options = parse_options(BOW, {})
    assert goal_text(options, None) == goals["defaultgoal"]
    assert goal_text(parse_options(BOW, {"goal": "gold"}), None) == goals["gold"]
    assert goal_text(parse_options(BOW, {"goal_text": "find the stairs"}), None) == "find the stairs"
    with pytest.raises(ConfigError, match="non-empty goal"):
        goal_text(parse_options(BOW, {"goal": "zeroknowledge"}), None)
    with pytest.raises(ConfigError, match="unknown goal"):
        resolve(RunSpec(method="ellm-bow", task="nethack:score", method_options={"goal": "glory"}))


def test_rewards_are_thresholded_similarity_over_the_episodic_count_cubed(tmp_path, vectors):
    context = MethodContext(task=get_task("nethack:score"), seed=0, run_dir=tmp_path)
    options = parse_options(BOW, {"threshold": 0.3})
    env = BOW.wrap_env(NetHackEnv("score", max_episode_steps=120), options, context)
    goal = vectors.bag(goal_text(options, None))
    rng = np.random.default_rng(0)
    counts: dict[str, int] = {}
    obs, _ = env.reset(seed=1)
    counts[decode_message(obs["message"])] = 1
    paid = repeats = below = ends = 0
    for _ in range(400):
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        message = decode_message(obs["message"])
        counts[message] = counts.get(message, 0) + 1
        sim = cosine(vectors.bag(message), goal)
        expected = sim / counts[message] ** 3 if sim > 0.3 else 0.0
        assert obs[REWARD_KEY][0] == pytest.approx(expected, rel=1e-5, abs=1e-7)
        paid += expected > 0
        repeats += expected > 0 and counts[message] > 1
        below += bool(message) and sim <= 0.3
        if terminated or truncated:
            final = float(obs[REWARD_KEY][0])
            obs, _ = env.reset()
            assert obs[REWARD_KEY][0] == pytest.approx(final)  # carried into the reset observation
            counts = {decode_message(obs["message"]): 1}
            ends += 1
    assert paid and repeats and below and ends >= 2


def test_ellm_bow_needs_messages_and_ellm_needs_a_suggestion_question(tmp_path):
    with pytest.raises(ConfigError, match=r"needs observation keys \['message'\]"):
        resolve(RunSpec(method="ellm-bow", task="crafter:reward"))
    with pytest.raises(ConfigError, match="suggestion question only for crafter"):
        resolve(RunSpec(method="ellm", task="nethack:score"))
    missing = str(tmp_path / "no-model")
    for method, task in (("ellm", "crafter:reward-free"), ("ellm-bow", "nethack:score")):
        with pytest.raises(ConfigError, match="does not exist"):
            resolve(RunSpec(method=method, task=task, method_options={"model_path": missing}))
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    with pytest.raises(ConfigError, match="not a sentence-transformers model folder"):
        resolve(RunSpec(method="ellm", task="crafter:reward-free", method_options={"model_path": str(not_a_model)}))
    assert Path(default_model_path(), "model.safetensors").is_file()


@pytest.fixture(autouse=True, scope="module")
def _drop_shared_objects():
    yield
    shared.clear()
