"""Each finished episode is filed under the batch that trained it (issue 49, class 1: ghost episodes).

An episode's statistics reach the main process when the episode ends, often before the learner has
trained the batch holding its last step; stamped with the learner's count on arrival, a row belonged to a
later batch than its stamp said, and a resume from the checkpoint at that stamp kept it while training
its batch again. The ledger holds rows until the learner's report of their batch names them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from llmexplore.agents.episode_ledger import EPISODE_UID_KEY, EpisodeLedger
from llmexplore.agents.sf_env import TrainingEnv
from llmexplore.envs.base import EPISODE_STATS_KEY


class Sink:
    def __init__(self) -> None:
        self.episodes: list[dict[str, Any]] = []
        self.intrinsic: list[tuple[int, float]] = []
        self.through: list[int] = []

    def on_episode(self, row: dict[str, Any]) -> None:
        self.episodes.append(row)

    def on_intrinsic_returns(self, env_steps: int, returns: list[float]) -> None:
        self.intrinsic += [(env_steps, r) for r in returns]

    def on_episodes_through(self, env_steps: int) -> None:
        self.through.append(env_steps)


def _row(uid: int, name: str) -> dict[str, Any]:
    return {"return": 1.0, "length": 10, "name": name, EPISODE_UID_KEY: uid}


def test_a_row_waits_for_the_report_of_the_batch_that_trained_it():
    sink = Sink()
    ledger = EpisodeLedger(sink, start_steps=1024)
    ledger.episode(_row(0, "a"))  # ended while batch 2,048 was trained: it belongs to batch 3,072
    ledger.batch_trained(2048, [])
    assert sink.episodes == [] and sink.through == [2048]
    ledger.episode(_row(1, "b"))
    ledger.batch_trained(3072, [(1, 5.0), (0, 7.0)])  # the batch's order differs from the order they ended
    assert [(e["name"], e["env_steps"]) for e in sink.episodes] == [("a", 3072), ("b", 3072)]
    assert EPISODE_UID_KEY not in sink.episodes[0]
    assert sink.intrinsic == [(3072, 7.0), (3072, 5.0)]  # each beside its episode, in the same order
    assert sink.through == [2048, 3072]


def test_an_env_s_episodes_are_matched_oldest_first():
    sink = Sink()
    ledger = EpisodeLedger(sink)
    for name in ("first", "second", "third"):
        ledger.episode(_row(4, name))
    ledger.batch_trained(512, [(4, 1.0), (4, 2.0)])
    ledger.batch_trained(1024, [(4, 3.0)])
    assert [(e["name"], e["env_steps"]) for e in sink.episodes] == [("first", 512), ("second", 512),
                                                                    ("third", 1024)]


def test_a_report_before_its_row_holds_the_log_incomplete_until_the_row_arrives():
    sink = Sink()
    ledger = EpisodeLedger(sink)
    ledger.batch_trained(512, [(3, 4.0)])  # messages from two processes crossed
    ledger.batch_trained(1024, [])
    assert sink.through == [] and ledger.owed() == 1
    ledger.episode(_row(3, "late"))
    assert sink.episodes[0]["env_steps"] == 512 and sink.intrinsic == [(512, 4.0)]
    assert sink.through == [1024] and ledger.owed() == 0


def test_rows_of_batches_never_trained_are_never_written():
    sink = Sink()
    ledger = EpisodeLedger(sink)
    ledger.episode(_row(0, "in flight when training stopped"))
    ledger.batch_trained(512, [])
    assert sink.episodes == [] and sink.intrinsic == []


class OneStepEnv(gym.Env):
    """Ends an episode on every step, with the adapter's own statistics."""

    observation_space = gym.spaces.Dict({"x": gym.spaces.Box(0, 1, (1,), np.float32)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return {"x": np.zeros(1, np.float32)}, {}

    def step(self, action):
        return {"x": np.zeros(1, np.float32)}, 0.0, True, False, {EPISODE_STATS_KEY: {"score": 3}}


def test_training_envs_name_themselves_in_finished_episodes_and_other_rollouts_do_not():
    *_, info = TrainingEnv(OneStepEnv(), uid=7, run_seed=0, tag_episodes=True).step(0)
    assert info[EPISODE_STATS_KEY] == {"score": 3, EPISODE_UID_KEY: 7}
    *_, info = TrainingEnv(OneStepEnv(), uid=7, run_seed=0).step(0)
    assert info[EPISODE_STATS_KEY] == {"score": 3}
