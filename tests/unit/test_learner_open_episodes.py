"""A checkpoint carries what the method learned, not the open episodes' partial intrinsic returns: a resumed
run builds its envs anew and each starts a new episode, whose intrinsic return must count its own steps only
(before the fix, the first episode of each env after a resume inherited what a dead one had earned)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from llmexplore.agents.learner import IntrinsicLearner
from llmexplore.methods.segments import SegmentSums


class _Method:
    """The two calls the learner's checkpoint hooks make of a method."""

    def __init__(self) -> None:
        self.loaded: dict | None = None

    def state_dict(self) -> dict:
        return {"weights": [1.0, 2.0]}

    def load_state_dict(self, state: dict) -> None:
        self.loaded = state

    def state_summary(self) -> dict:
        return {}


def test_a_resumed_env_counts_its_new_episode_from_its_own_first_step():
    run = SimpleNamespace(task="crafter:reward-free", method="rnd",
                          identity=lambda: {"task": "crafter:reward-free"})  # what a checkpoint records
    before = SimpleNamespace(settings=SimpleNamespace(run=run), method=_Method(), episode_returns=SegmentSums(),
                             int_normalizer=None)  # one reward stream
    # env 7 is three steps into an episode, earning 1 a step, when the checkpoint is written
    assert before.episode_returns.add(np.array([7]), np.ones((1, 3)), np.zeros((1, 3))) == []
    checkpoint: dict = {}
    IntrinsicLearner.add_to_checkpoint(before, checkpoint)

    after = SimpleNamespace(method=_Method(), episode_returns=SegmentSums(), _resumed=False, int_normalizer=None)
    IntrinsicLearner.after_state_loaded(after, checkpoint)
    assert after.method.loaded == {"weights": [1.0, 2.0]} and after._resumed  # what the method learned
    # the resumed env 7 plays a new two-step episode: its return is 2, not 2 + the dead episode's 3
    assert after.episode_returns.add(np.array([7]), np.ones((1, 2)), np.array([[0, 1]])) == [(0, 1, 2.0)]
