"""The episodic message count wrapper: exact messages, this step included, reset per episode."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np

from llmexplore.envs import make_adapter
from llmexplore.envs.nethack.text import encode_message
from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY, EpisodicMessageCount


class ScriptedMessages(gym.Env):
    """Emits a fixed list of messages, one per step; an episode ends after ``length`` steps."""

    observation_space = gym.spaces.Dict({"message": gym.spaces.Box(0, 255, (256,), np.uint8)})
    action_space = gym.spaces.Discrete(1)

    def __init__(self, messages: list[str], length: int):
        self.messages, self.length, self.i, self.t = messages, length, 0, 0

    def _obs(self):
        obs = {"message": encode_message(self.messages[self.i % len(self.messages)])}
        self.i += 1
        return obs

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, self.t >= self.length, False, {}


def test_counts_exact_messages_and_resets_each_episode():
    env = EpisodicMessageCount(ScriptedMessages(["", "It's a wall.", "It's a wall.", "", "It's a wall!", ""], 5))
    assert env.observation_space[EPISODIC_MESSAGE_COUNT_KEY].shape == (1,)
    obs, _ = env.reset()
    counts = [obs[EPISODIC_MESSAGE_COUNT_KEY]]
    for _ in range(5):
        obs, _, terminated, _, _ = env.step(0)
        counts.append(obs[EPISODIC_MESSAGE_COUNT_KEY])
    assert terminated
    assert all(c.dtype == np.float32 and c.shape == (1,) for c in counts)
    # "", wall, wall, "", wall! (a different message), ""
    assert [int(c[0]) for c in counts] == [1, 1, 2, 2, 1, 3]
    obs, _ = env.reset()  # the next episode starts counting afresh: "" again, count 1
    assert int(obs[EPISODIC_MESSAGE_COUNT_KEY][0]) == 1


def test_counts_on_real_nethack_match_a_recount():
    env = EpisodicMessageCount(make_adapter("nethack:score").make_env(seed=3))
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    seen = Counter([obs["message"].tobytes()])
    assert obs[EPISODIC_MESSAGE_COUNT_KEY][0] == 1
    repeats = 0
    for _ in range(400):
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
            seen = Counter()
        seen[obs["message"].tobytes()] += 1
        assert obs[EPISODIC_MESSAGE_COUNT_KEY][0] == seen[obs["message"].tobytes()]
        repeats += seen[obs["message"].tobytes()] > 1
    env.close()
    assert repeats > 50  # random play repeats messages, so the check above is not vacuous
