"""The run's TensorBoard scalars: written beside sample-factory's, keyed by env steps."""

from __future__ import annotations

import pytest

from llmexplore.benchmarks.run.tensorboard import METRIC_EVERY, RunBoard, summary_dir
from llmexplore.envs import make_adapter


def test_scalars_are_keyed_by_env_steps(tmp_path):
    pytest.importorskip("nle")
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    adapter = make_adapter("nethack:score")
    board = RunBoard(tmp_path, adapter)
    board.metrics(512, {"reward_int_mean": 0.25, "reward_ext_mean": 0.0, "rnd_loss": 1.5})
    board.intrinsic_returns(1024, [3.0, 5.0])
    for i in range(METRIC_EVERY + 3):
        board.episode({"env_steps": 100 * (i + 1), "return": float(i), "progression": 2.0 * i, "length": 10})
    board.close()
    events = accumulator.EventAccumulator(str(summary_dir(tmp_path)))
    events.Reload()
    scalars = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    assert scalars["llmexplore/intrinsic_reward_per_step"] == [(512, 0.25)]
    assert scalars["method/rnd_loss"] == [(512, 1.5)]
    assert scalars["llmexplore/intrinsic_return_per_episode"] == [(1024, 3.0), (1024, 5.0)]
    assert len(scalars["llmexplore/episode_return"]) == METRIC_EVERY + 3
    metric = scalars[f"benchmark/{adapter.metric}"]
    # after the 10th episode, and the rest at close, each over the episodes so far
    expected_first = adapter.summarize([{"progression": 2.0 * i, "return": float(i), "length": 10}
                                        for i in range(METRIC_EVERY)])[adapter.metric]
    assert metric[0] == (100 * METRIC_EVERY, pytest.approx(expected_first))
    assert metric[-1][0] == 100 * (METRIC_EVERY + 3)
    assert summary_dir(tmp_path) == tmp_path / "sf" / ".summary" / "0"
