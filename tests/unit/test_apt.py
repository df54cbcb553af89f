"""APT: rare states earn more than crowded ones; the representation trains; state round-trips."""

from __future__ import annotations

from pathlib import Path

import torch

from llmexplore.envs import get_task, make_adapter
from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options


def _apt(task_name: str = "nethack:score", **options):
    task = get_task(task_name)
    cls = get_method("apt")
    return cls(parse_options(cls, options), MethodContext(task=task, seed=0, run_dir=Path(".")),
               make_adapter(task).observation_space())


def _batch(crop: torch.Tensor, blstats: torch.Tensor) -> RewardBatch:
    n, t1 = crop.shape[:2]
    return RewardBatch(obs={"crop": crop, "blstats": blstats}, actions=torch.zeros(n, t1 - 1),
                       dones=torch.zeros(n, t1 - 1))


def test_isolated_states_get_larger_rewards_than_crowded_ones():
    apt = _apt(k=4)
    crop = torch.full((8, 9, 9, 9), 46.0)  # a crowd of identical rooms ...
    blstats = torch.zeros(8, 9, 27)
    crop[0, 5] = 35.0  # ... and one corridor view nobody else saw
    blstats[0, 5, 10] = 99.0
    reward = apt.reward(_batch(crop, blstats))
    assert reward.shape == (8, 8)
    assert reward[0, 4] > 2 * reward[1:].mean()


def test_contrastive_loss_falls():
    apt = _apt(lr=1e-3)
    g = torch.Generator().manual_seed(0)
    # each trajectory drifts slowly, as successive game screens do
    start = torch.randint(32, 120, (16, 1, 9, 9), generator=g).float()
    crop = start + torch.randint(-2, 3, (16, 9, 9, 9), generator=g).float().cumsum(dim=1)
    blstats = torch.randint(0, 20, (16, 1, 27), generator=g).float().expand(16, 9, 27).clone()
    batch = _batch(crop, blstats)
    first = apt.update(batch)["apt_contrastive_loss"]
    for _ in range(80):
        last = apt.update(batch)["apt_contrastive_loss"]
    # from chance (log of 128 candidates) most of the way to the floor set by the near-identical
    # neighbours within each trajectory (about log 8)
    assert first > 4.5 and last < first - 1.0


def test_state_round_trip_and_images():
    a, b = _apt("crafter:reward-free"), _apt("crafter:reward-free")
    image = torch.randint(0, 255, (4, 6, 64, 64, 3)).float()
    batch = RewardBatch(obs={"image": image}, actions=torch.zeros(4, 5), dones=torch.zeros(4, 5))
    a.update(batch)
    a.reward(batch)
    b.load_state_dict(a.state_dict())
    feats_a = a.encoder(a._inputs(batch.next_obs))
    feats_b = b.encoder(b._inputs(batch.next_obs))
    assert torch.allclose(feats_a, feats_b)


def _brute_force_knn(features: torch.Tensor, reference: torch.Tensor, k: int) -> torch.Tensor:
    """Mean distance to the k nearest reference rows other than the row itself, one row at a time."""
    out = []
    for i, row in enumerate(features.tolist()):
        others = [j for j in reference.tolist() if j != i]
        dists = sorted(sum((a - b) ** 2 for a, b in zip(row, features[j].tolist())) ** 0.5 for j in others)
        out.append(sum(dists[:k]) / k)
    return torch.tensor(out, dtype=torch.float64)


def test_knn_excludes_only_the_row_itself_also_beyond_the_reference_subset():
    """A batch larger than the reference subset: rows outside it keep their true nearest neighbour."""
    apt = _apt(k=3, reference_size=16)
    g = torch.Generator().manual_seed(1)
    features = torch.randn(40, 5, generator=g, dtype=torch.float64)
    features[7] = features[30]  # an exact duplicate is a neighbour at distance 0, not "itself"
    apt._generator.manual_seed(123)
    got = apt.knn_distance(features)
    apt._generator.manual_seed(123)
    reference = torch.randperm(40, generator=apt._generator)[:16]  # the subset knn_distance drew
    expected = _brute_force_knn(features, reference, k=3)
    assert torch.allclose(got, expected, atol=1e-9)
    outside = [i for i in range(40) if i not in set(reference.tolist())]
    assert outside, "the check needs rows outside the subset"


def test_knn_of_a_tiny_batch():
    apt = _apt(k=12)
    features = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    assert torch.allclose(apt.knn_distance(features), torch.tensor([7.5, 5.0, 7.5]))  # k falls to 2
    assert apt.knn_distance(features[:1]).tolist() == [0.0]
