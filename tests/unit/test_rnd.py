"""RND: prediction error falls on inputs it keeps seeing, not on new ones."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from llmexplore.envs import get_task, make_adapter
from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options
from llmexplore.methods.rnd import RNDOptions, _divides_error


def _method(task_name: str = "nethack:score", streams: int | None = None, **options):
    """RND as the learner builds it, in a run training ``streams`` reward streams (None: outside a run)."""
    task = get_task(task_name)
    space = make_adapter(task).observation_space()
    cls = get_method("rnd")
    run = None if streams is None else SimpleNamespace(train=SimpleNamespace(reward_streams=streams))
    return cls(parse_options(cls, options), MethodContext(task=task, seed=0, run_dir=Path("."), run=run), space)


def _nethack_batch(seed: int) -> RewardBatch:
    g = torch.Generator().manual_seed(seed)
    obs = {
        "crop": torch.randint(32, 127, (8, 17, 9, 9), generator=g).float(),
        "blstats": torch.randint(0, 50, (8, 17, 27), generator=g).float(),
    }
    return RewardBatch(obs=obs, actions=torch.zeros(8, 16), dones=torch.zeros(8, 16))


def test_error_falls_on_repeated_inputs_and_stays_high_on_new_ones():
    rnd = _method("nethack:score")
    seen = _nethack_batch(0)
    first = rnd.prediction_error(seen).mean().item()
    for _ in range(150):
        rnd.reward(seen)
        rnd.update(seen)
    after = rnd.prediction_error(seen).mean().item()
    novel = rnd.prediction_error(_nethack_batch(1)).mean().item()
    assert after < 0.3 * first
    assert novel > 2 * after


def test_reward_shape_and_image_inputs():
    rnd = _method("crafter:reward-free")
    obs = {"image": torch.randint(0, 255, (2, 5, 64, 64, 3)).float()}
    batch = RewardBatch(obs=obs, actions=torch.zeros(2, 4), dones=torch.zeros(2, 4))
    assert rnd.reward(batch).shape == (2, 4)
    assert "rnd_loss" in rnd.update(batch)


def test_state_round_trip():
    a, b = _method("nethack:score"), _method("nethack:score")
    batch = _nethack_batch(0)
    for _ in range(5):
        a.reward(batch)
        a.update(batch)
    b.load_state_dict(a.state_dict())
    assert torch.allclose(a.reward(batch), b.reward(batch))


def test_with_two_streams_the_error_is_divided_once_by_the_return_std_as_published():
    """Burda et al. divide the squared error by the running std of the intrinsic return alone; with one stream
    the error needs a scale of its own and is divided by its running std, as before."""
    batch = _nethack_batch(0)
    for streams, divided in ((None, True), (1, True), (2, False)):
        rnd = _method(streams=streams)
        for _ in range(3):
            rnd.update(batch)
        std = rnd.error_stats.std.float()
        assert float(std) != 1.0
        expected = rnd.prediction_error(batch) / (std if divided else 1)
        assert torch.allclose(rnd.reward(batch), expected), streams
    # the two explicit settings, whatever the streams
    assert _method(streams=2, error_normalize="own_std").divides_error
    assert not _method(streams=1, error_normalize="none").divides_error
    # with the caption term each term keeps its own scale (per_term; the twin is built with own_std)
    context = SimpleNamespace(run=SimpleNamespace(train=SimpleNamespace(reward_streams=2)))
    assert _divides_error(RNDOptions(language=True), context)
    assert not _divides_error(RNDOptions(), context)
