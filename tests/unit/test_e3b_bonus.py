"""E3B's elliptical bonus against numbers worked out by hand (docs/METHODS.md, E3B: "What the bonus pays
for on Crafter"): a direction the episode has not seen pays ‖φ‖²/λ, one it has seen pays little."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from llmexplore.envs import get_task, make_adapter
from llmexplore.methods import MethodContext, get_method, parse_options


def _e3b(**options):
    cls = get_method("e3b")
    spec = get_task("crafter:reward-free")
    context = MethodContext(task=spec, seed=0, run_dir=Path("."), num_actions=17)
    return cls(parse_options(cls, options), context, make_adapter(spec).observation_space())


def test_e3b_bonus_of_a_tiny_episode_worked_by_hand_with_a_reset_across_batches():
    """λ = 0.1, D = 2, one env: o0 = e1 enters C at once (C = diag(1.1, 0.1)); o1 = e1 pays 1/1.1 (C =
    diag(2.1, 0.1)); o2 = 3·e2, a direction the episode has not seen, pays 9/0.1 = 90; the episode ends
    there, so o3 = e2 opens the next one (pays 0, C = diag(0.1, 1.1)) and o4 = e2 pays 1/1.1 again.
    Delivered as two batches of two transitions (o2 is the last of the first and the first of the second)."""
    e3b = _e3b(embed_dim=2, ridge=0.1)
    e1, e2 = [1.0, 0.0], [0.0, 1.0]
    phi = torch.tensor([[e1, e1, [0.0, 3.0], e2, e2]], dtype=torch.float64)
    dones = torch.tensor([[False, False, True, False]])
    first = e3b._episode_bonuses(phi[:, :3], dones[:, :2], np.array([5]))
    second = e3b._episode_bonuses(phi[:, 2:], dones[:, 2:], np.array([5]))
    got = torch.cat([first, second], dim=1)[0].tolist()
    assert got == pytest.approx([1 / 1.1, 90.0, 0.0, 1 / 1.1], rel=1e-12)
    expected_cov_inv = torch.diag(torch.tensor([10.0, 1 / 2.1], dtype=torch.float64))  # C = diag(0.1, 2.1)
    assert torch.allclose(e3b.inverse_covariance[5], expected_cov_inv)


def test_e3b_one_new_direction_outweighs_an_episode_of_familiar_steps():
    """Why one rare view dominates an episode's bonus: the k-th repeat of a familiar direction pays
    1/(k + λ), while a single step along a new direction of the same length pays ‖φ‖²/λ = 10 in full,
    more than twice what the 50 familiar steps pay together (Σ 1/(k + 0.1) ≈ 4.4)."""
    e3b = _e3b(embed_dim=2, ridge=0.1)
    familiar = torch.tensor([[1.0, 0.0]] * 51, dtype=torch.float64)
    phi = torch.cat([familiar, torch.tensor([[0.0, 1.0]], dtype=torch.float64)])[None]
    bonus = e3b._episode_bonuses(phi, torch.zeros(1, 51, dtype=torch.bool), None)[0]
    assert bonus[-1] == pytest.approx(10.0)
    assert bonus[:-1].tolist() == pytest.approx([1 / (k + 0.1) for k in range(1, 51)], rel=1e-12)
    assert bonus[-1] > 2 * bonus[:-1].sum()
