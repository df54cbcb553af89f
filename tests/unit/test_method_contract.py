"""The learner-side contract of ``methods/base.py``: what ``reward`` may change, and how work it did reaches
``update`` (``carry``/``carried``), kept by the methods that carry work (E3B, ICM, ONI)."""

from __future__ import annotations

import torch

from llmexplore.methods import RewardBatch
from llmexplore.methods.registry import list_methods
from tests.unit.test_exploration_baselines import _crafter_batch, _method
from tests.unit.test_oni_method import make_batch, make_method


def test_carried_work_reaches_update_for_the_same_batch_only_and_once():
    none = _method("none")
    batch, other = _crafter_batch(), _crafter_batch(seed=1)
    none.carry(batch, "work")
    assert none.carried(other) is None  # another batch: nothing, and the work is let go
    assert none.carried(batch) is None
    none.carry(batch, "work")
    assert none.carried(batch) == "work" and none.carried(batch) is None


def test_every_method_declares_whether_its_reward_changes_state():
    declared = {cls.name: cls.reward_changes_state for cls in list_methods()}
    assert {name for name, changes in declared.items() if changes} == {"e3b", "apt", "noveld"}


def test_e3b_reward_advances_state_and_update_trains_on_the_carried_pass():
    e3b = _method("e3b", embed_dim=8)
    batch = _crafter_batch(uids=[1, 2, 3, 4])
    passes = []
    e3b.model.embed.register_forward_hook(lambda *_: passes.append(1))
    first = e3b.raw_bonus(batch)
    again = e3b.raw_bonus(batch)  # the ellipses absorbed the first call's observations: smaller bonuses
    assert (again < first).all()
    passes.clear()
    with torch.no_grad():  # as the learner calls it
        e3b.reward(batch)
    e3b.update(batch)
    assert len(passes) == 1  # one embedding pass a batch, carried from reward to update


def test_icm_reward_changes_nothing_and_carries_its_pass():
    icm = _method("icm", embed_dim=8)
    batch = _crafter_batch()
    with torch.no_grad():
        first = icm.reward(batch)
    assert torch.equal(first, icm.reward(batch))  # a function of the state and the batch
    passes = []
    icm.model.embed.register_forward_hook(lambda *_: passes.append(1))
    icm.reward(batch)
    icm.update(batch)
    assert len(passes) == 1


def test_oni_update_without_reward_does_not_count_as_rewarding(tmp_path):
    """``update`` on a batch ``reward`` did not see reads its captions itself; it used to call ``reward``,
    whose counters then reported a rewarded batch that the learner never paid."""
    method = make_method("oni-retrieval", tmp_path)
    batch: RewardBatch = make_batch()
    try:
        method.update(batch)
        metrics = method.metrics()
        assert "oni_labelled_share" not in metrics and "oni_reward_ms_per_batch" not in metrics
        assert metrics["oni_captions"] > 0  # the batch's captions were read and asked about
        method.reward(batch)
        method.update(batch)
        assert method.metrics()["oni_rewarded_share"] == 0.0  # one rewarded batch, nothing labelled yet
    finally:
        method.close()
