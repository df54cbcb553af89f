"""E3B, NovelD and ICM against independent computations; state round trips; checks before any work."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.base import ENV_UID_KEY
from llmexplore.errors import ConfigError
from llmexplore.methods import CheckContext, MethodContext, RewardBatch, get_method, parse_options
from llmexplore.methods.episodic import rounds
from llmexplore.methods.registry import method_names

CRAFTER = "crafter:reward-free"


def _method(name: str, task: str = CRAFTER, **options):
    cls = get_method(name)
    spec = get_task(task)
    space = make_adapter(spec).observation_space()
    context = MethodContext(task=spec, seed=0, run_dir=Path("."), num_actions=17 if task == CRAFTER else 23)
    return cls(parse_options(cls, options), context, space)


def _crafter_batch(n: int = 4, t: int = 6, seed: int = 0, uids=None) -> RewardBatch:
    g = torch.Generator().manual_seed(seed)
    space = make_adapter(get_task(CRAFTER)).observation_space()
    obs = {k: torch.randint(0, 8, (n, t + 1, *s.shape), generator=g).to(torch.uint8 if s.dtype == np.uint8
                                                                          else torch.float32)
           for k, s in space.spaces.items()}
    obs["image"] = torch.randint(0, 255, (n, t + 1, 64, 64, 3), generator=g).to(torch.uint8)
    if uids is not None:
        obs[ENV_UID_KEY] = torch.tensor(uids, dtype=torch.int32)[:, None, None].expand(n, t + 1, 1).clone()
    return RewardBatch(obs=obs, actions=torch.randint(0, 17, (n, t), generator=g), dones=torch.zeros(n, t))


# -- E3B -------------------------------------------------------------------------------------------------

def _direct_e3b(phi: torch.Tensor, dones: torch.Tensor, ridge: float) -> list[float]:
    """b_t = φ_{t+1}ᵀ (λI + Σ φ_i φ_iᵀ over the episode's earlier observations)⁻¹ φ_{t+1}, by solving."""
    d = phi.shape[1]
    seen, out = [phi[0]], []
    for step in range(phi.shape[0] - 1):
        h = phi[step + 1]
        if dones[step]:
            out.append(0.0)
            seen = [h]
            continue
        cov = ridge * torch.eye(d, dtype=torch.float64) + sum(torch.outer(x, x) for x in seen)
        out.append(float(h @ torch.linalg.inv(cov) @ h))
        seen.append(h)
    return out


def test_e3b_bonus_equals_a_direct_inverse_with_episode_resets_and_across_batches():
    e3b = _method("e3b", embed_dim=5, ridge=0.3)
    g = torch.Generator().manual_seed(1)
    phi = torch.randn(2, 13, 5, generator=g, dtype=torch.float64)
    dones = torch.zeros(2, 12, dtype=torch.bool)
    dones[0, 3] = dones[0, 9] = dones[1, 7] = True
    expected = [_direct_e3b(phi[r], dones[r], 0.3) for r in range(2)]
    # the same two envs' steps, delivered as two batches of 6 transitions
    first = e3b._episode_bonuses(phi[:, :7], dones[:, :6], np.array([11, 12]))
    second = e3b._episode_bonuses(phi[:, 6:], dones[:, 6:], np.array([11, 12]))
    got = torch.cat([first, second], dim=1)
    assert got.reshape(-1).tolist() == pytest.approx(expected[0] + expected[1], rel=1e-9)
    assert got[0, 3] == 0 and got[0, 9] == 0 and got[1, 7] == 0


def test_e3b_batch_whose_rows_all_go_on_an_episode_equals_a_direct_inverse():
    """The usual batch after the first: every env's row continues its episode and none ends, which is
    absorbed for all rows at once (no rows copied out and back)."""
    e3b = _method("e3b", embed_dim=4, ridge=0.5)
    phi = torch.randn(3, 11, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    dones = torch.zeros(3, 10, dtype=torch.bool)
    dones[1, 2] = True  # in the first batch only
    expected = [_direct_e3b(phi[r], dones[r], 0.5) for r in range(3)]
    first = e3b._episode_bonuses(phi[:, :5], dones[:, :4], np.array([7, 8, 9]))
    second = e3b._episode_bonuses(phi[:, 4:], dones[:, 4:], np.array([7, 8, 9]))
    got = torch.cat([first, second], dim=1)
    assert got.reshape(-1).tolist() == pytest.approx(expected[0] + expected[1] + expected[2], rel=1e-9)
    for row, uid in enumerate((7, 8, 9)):  # C⁻¹ stays symmetric and each env keeps its own
        cov = e3b.inverse_covariance[uid]
        assert torch.equal(cov, cov.T)
        start = 3 if row == 1 else 0  # env 8's episode restarted with phi[1, 3]
        direct = 0.5 * torch.eye(4, dtype=torch.float64) + phi[row, start:].T @ phi[row, start:]
        assert torch.allclose(cov, torch.linalg.inv(direct), rtol=1e-9, atol=1e-12)


def test_e3b_float32_stays_close_over_a_long_episode():
    """docs/METHODS.md's figure: off by about 1e-6 of the largest bonus over 2,000 steps at D = 16
    (measured 1.2e-6 on these embeddings); the bound leaves room for other BLAS builds."""
    e3b32, e3b64 = _method("e3b", embed_dim=16, precision="float32"), _method("e3b", embed_dim=16)
    phi = torch.randn(1, 2001, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    dones = torch.zeros(1, 2000, dtype=torch.bool)
    exact = e3b64._episode_bonuses(phi, dones, None)
    approx = e3b32._episode_bonuses(phi.float(), dones, None)
    assert (approx.double() - exact).abs().max() < 1e-5 * exact.abs().max()


def test_e3b_rows_of_one_env_are_taken_in_order_within_a_batch():
    assert [r.tolist() for r in rounds(np.array([3, 4, 3, 3, 5]), 5)] == [[0, 1, 4], [2], [3]]
    e3b = _method("e3b")
    batch = _crafter_batch(n=4, uids=[7, 8, 7, 8])
    joint = e3b.raw_bonus(batch)
    alone = _method("e3b")
    for rows in ([0, 1], [2, 3]):  # the batch cut in two, in time order
        part = RewardBatch(obs={k: v[rows] for k, v in batch.obs.items()}, actions=batch.actions[rows],
                           dones=batch.dones[rows])
        assert torch.allclose(joint[rows], alone.raw_bonus(part))


def test_e3b_state_round_trip_gives_identical_rewards_and_fresh_episodes():
    """A resumed run's envs start new episodes: the learned parts come back, the ellipses start empty."""
    a, b = _method("e3b"), _method("e3b")
    first, second = _crafter_batch(uids=[0, 1, 2, 3]), _crafter_batch(seed=1, uids=[0, 1, 2, 3])
    a.reward(first)
    a.update(first)
    b.load_state_dict(a.state_dict())
    assert b.inverse_covariance == {} and len(a.inverse_covariance) == 4
    a.inverse_covariance.clear()  # what the resumed run sees: every env at an episode start
    assert torch.equal(a.reward(second), b.reward(second))


def test_e3b_inverse_dynamics_learns_a_fixed_action_rule():
    """Actions that are a function of the two observations: the inverse head's loss must fall."""
    e3b = _method("e3b", lr=1e-3)
    batch = _crafter_batch(n=8, t=8)
    batch.actions.copy_(batch.obs["inventory"][:, 1:, 0].long() % 17)
    losses = [e3b.update(batch)["e3b_inverse_loss"] for _ in range(40)]
    assert losses[-1] < 0.5 * losses[0]


# -- NovelD ----------------------------------------------------------------------------------------------

def test_noveld_on_a_hand_made_novelty_sequence_with_revisits(monkeypatch):
    noveld = _method("noveld", normalize=False, count_keys=("facing",))
    states = [0, 1, 2, 1, 3, 0, 4, 4, 5]            # s_0 .. s_8; s_3 and s_5 revisit, s_7 repeats s_6
    novelty = torch.tensor([[0.9, 1.0, 2.0, 0.5, 3.0, 1.0, 2.5, 2.5, 0.1]])
    batch = _crafter_batch(n=1, t=8, uids=[5])
    batch.obs["facing"][0, :, 0] = torch.tensor(states, dtype=torch.uint8)
    monkeypatch.setattr(noveld, "novelty", lambda obs: novelty)
    alpha, expected, seen = 0.5, [], {states[0]}
    for t in range(8):
        first = states[t + 1] not in seen
        seen.add(states[t + 1])
        expected.append(max(float(novelty[0, t + 1] - alpha * novelty[0, t]), 0.0) * first)
    assert noveld.reward(batch)[0].tolist() == pytest.approx(expected)
    # the episode goes on in the next batch: s_1 (seen) pays nothing, a new state pays
    nxt = _crafter_batch(n=1, t=2, uids=[5])
    nxt.obs["facing"][0, :, 0] = torch.tensor([5, 1, 9], dtype=torch.uint8)
    monkeypatch.setattr(noveld, "novelty", lambda obs: torch.tensor([[1.0, 3.0, 3.0]]))
    assert noveld.reward(nxt)[0].tolist() == pytest.approx([0.0, 1.5])


def test_noveld_first_visits_restart_with_each_episode():
    noveld = _method("noveld", count_keys=("facing",))
    batch = _crafter_batch(n=1, t=4, uids=[0])
    batch.obs["facing"][0, :, 0] = torch.tensor([1, 2, 1, 2, 3], dtype=torch.uint8)
    batch.dones[0, 1] = 1  # s_2 starts a new episode
    assert noveld.first_visits(batch)[0].tolist() == [1.0, 0.0, 1.0, 1.0]


def test_noveld_ellm_variant_and_state_round_trip():
    ellm = _method("noveld", alpha=1.0, first_visit=False, normalize=False)
    batch = _crafter_batch(uids=[0, 1, 2, 3])
    novelty = ellm.novelty(batch.obs)
    assert torch.allclose(ellm.reward(batch), (novelty[:, 1:] - novelty[:, :-1]).clamp_min(0))
    a, b = _method("noveld"), _method("noveld")
    a.reward(batch)
    a.update(batch)
    b.load_state_dict(a.state_dict())
    assert b.visited == {} and len(a.visited) == 4  # a resumed run's envs start new episodes
    a.visited.clear()
    later = _crafter_batch(seed=3, uids=[0, 1, 2, 3])
    assert torch.equal(a.reward(later), b.reward(later))


# -- ICM -------------------------------------------------------------------------------------------------

def test_icm_losses_and_reward_on_a_fixed_transition():
    icm = _method("icm")
    batch = _crafter_batch(n=2, t=3)
    batch.dones[1, 2] = 1
    with torch.no_grad():
        phi = icm.model.embed({k: v.reshape(-1, *v.shape[2:]) for k, v in batch.obs.items()}).reshape(2, 4, -1)
        now, nxt = phi[:, :-1].reshape(6, -1), phi[:, 1:].reshape(6, -1)
        actions = batch.actions.reshape(-1)
        predicted = icm.forward_model(torch.cat([now, F.one_hot(actions, 17).float()], dim=1))
        error = 0.5 * ((predicted - nxt) ** 2).sum(dim=1)
        keep = torch.tensor([1, 1, 1, 1, 1, 0], dtype=torch.bool)
        inverse = F.cross_entropy(icm.model.inverse(torch.cat([now, nxt], dim=1))[keep], actions[keep])
        losses = icm.losses(batch)
        reward = icm.reward(batch)
    assert reward.reshape(-1).tolist() == pytest.approx((error * keep).tolist(), rel=1e-5)
    assert float(losses["forward"]) == pytest.approx(float(error[keep].mean()), rel=1e-5)
    assert float(losses["inverse"]) == pytest.approx(float(inverse), rel=1e-5)
    assert float(losses["total"]) == pytest.approx(0.8 * float(inverse) + 0.2 * float(error[keep].mean()), rel=1e-5)


def test_icm_detach_target_keeps_the_forward_loss_out_of_the_target_features():
    batch = _crafter_batch(n=2, t=3)
    grads = {}
    for detach in (False, True):
        icm = _method("icm", detach_target=detach, beta=1.0)
        icm.losses(batch)["forward"].backward()
        grads[detach] = icm.model.embed.out.weight.grad.norm()
    assert grads[True] > 0 and not torch.isclose(grads[True], grads[False])


def test_icm_state_round_trip_gives_identical_rewards():
    a, b = _method("icm"), _method("icm")
    batch = _crafter_batch()
    a.update(batch)
    b.load_state_dict(a.state_dict())
    assert torch.equal(a.reward(batch), b.reward(batch))


@pytest.mark.parametrize("name", ["e3b", "icm"])
def test_the_embedding_trains_when_the_reward_came_first_under_no_grad(name):
    """As the learner calls them: reward under no_grad, then update; the update reuses the reward's pass."""
    method = _method(name)
    batch = _crafter_batch(n=4, t=6, uids=[0, 1, 2, 3])
    before = [p.detach().clone() for p in method.model.embed.parameters()]
    with torch.no_grad():
        first = method.reward(batch)
    method.update(batch)
    assert all(p.grad is not None for p in method.model.embed.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, method.model.embed.parameters()))
    if name == "icm":  # the reward was computed before the step: recomputing it now gives other values
        assert not torch.equal(first, method.reward(batch))


# -- APT on ICM features, language novelty, checks -------------------------------------------------------

def test_apt_on_icm_features_rewards_and_trains():
    apt = _method("apt", representation="icm")
    batch = _crafter_batch()
    assert apt.reward(batch).shape == (4, 6)
    metrics = apt.update(batch)
    assert "apt_icm_inverse_loss" in metrics and "apt_icm_forward_loss" in metrics
    copy = _method("apt", representation="icm")
    copy.load_state_dict(apt.state_dict())
    assert torch.equal(apt.features(batch.obs), copy.features(batch.obs))


@pytest.mark.parametrize("name", ["rnd", "noveld"])
def test_language_novelty_adds_a_caption_embedding_term(name):
    cls = get_method(name)
    task = get_task(CRAFTER)
    options = parse_options(cls, {"language": True})
    context = MethodContext(task=task, seed=0, run_dir=Path("."))
    env = cls.wrap_env(make_adapter(task).make_env(), options, context)
    obs, _ = env.reset(seed=0)
    frames, actions = [obs], []
    for _ in range(6):
        actions.append(int(env.action_space.sample()))
        frames.append(env.step(actions[-1])[0])
    assert frames[0]["caption_embedding"].shape == (384,)
    assert np.linalg.norm(frames[0]["caption_embedding"]) == pytest.approx(1.0, abs=1e-4)
    batch = RewardBatch(obs={k: torch.as_tensor(np.stack([f[k] for f in frames]))[None] for k in obs},
                        actions=torch.tensor(actions)[None], dones=torch.zeros(1, 6))
    method = cls(options, context, env.observation_space)
    assert method.language is not None and method.language.keys == ("caption_embedding",)
    assert method.reward(batch).shape == (1, 6)
    assert "language_rnd_loss" in method.update(batch)
    plain = cls(parse_options(cls, {}), context, make_adapter(task).observation_space())
    with pytest.raises(ConfigError, match="caption_embedding"):
        cls(options, context, make_adapter(task).observation_space())
    assert plain.language is None


@pytest.mark.parametrize("name", ["e3b", "icm"])
def test_a_task_whose_observation_the_embedding_cannot_read_is_refused(name):
    cls = get_method(name)
    task = get_task(CRAFTER)
    space = make_adapter(task).observation_space()
    lacking = gym.spaces.Dict({k: v for k, v in space.spaces.items() if k != "inventory"})
    from llmexplore.lm.config import LMConfig

    cls.check_run(CheckContext(task=task, obs_space=space, options=parse_options(cls, {}), lm=LMConfig()))
    with pytest.raises(ConfigError, match="inventory"):
        cls.check_run(CheckContext(task=task, obs_space=lacking, options=parse_options(cls, {}), lm=LMConfig()))
    with pytest.raises(ConfigError, match="network"):
        cls.check_run(CheckContext(task=task, obs_space=space, options=parse_options(cls, {"network": "huge"}),
                                   lm=LMConfig()))


def test_noveld_refuses_count_keys_the_task_lacks():
    cls = get_method("noveld")
    task = get_task(CRAFTER)
    from llmexplore.lm.config import LMConfig

    with pytest.raises(ConfigError, match="count_keys"):
        cls.check_run(CheckContext(task=task, obs_space=make_adapter(task).observation_space(),
                                   options=parse_options(cls, {"count_keys": ["position"]}), lm=LMConfig()))


def test_nethack_embeddings_read_the_message_crop_and_stats():
    e3b = _method("e3b", task="nethack:score")
    space = make_adapter(get_task("nethack:score")).observation_space()
    obs = {k: torch.zeros(2, 3, *s.shape) for k, s in space.spaces.items()}
    batch = RewardBatch(obs=obs, actions=torch.zeros(2, 2, dtype=torch.long), dones=torch.zeros(2, 2))
    assert e3b.reward(batch).shape == (2, 2)
    assert set(e3b.update(batch)) == {"e3b_inverse_loss", "e3b_inverse_accuracy"}


@pytest.mark.parametrize("bad", [{"ridge": float("nan")}, {"ridge": 0}, {"embed_dim": 0}, {"lr": float("inf")},
                                 {"precision": "float16"}])
def test_e3b_options_are_checked(bad):
    with pytest.raises(ConfigError):
        parse_options(get_method("e3b"), bad)


def test_e3b_embedding_output_choices_are_the_layers_inverse_dynamics_builds():
    """E3B spells the choices in its option type so that importing it needs no torch; they must not drift."""
    from typing import get_args

    from llmexplore.methods.inverse_dynamics import EMBEDDING_OUTPUTS

    field = get_method("e3b").Options.model_fields["embedding_output"]
    assert get_args(field.annotation) == EMBEDDING_OUTPUTS


# -- the update beside PPO's ------------------------------------------------------------------------------

BESIDE_POLICY = sorted(name for name in method_names() if get_method(name).update_beside_policy)


def test_the_lm_free_baselines_may_train_beside_ppo_and_lm_methods_do_not_unless_they_say_so():
    assert {"rnd", "noveld", "e3b", "icm", "apt"} <= set(BESIDE_POLICY)
    assert not get_method("none").update_beside_policy  # nothing to overlap: the learner keeps its order
    assert all(not get_method(name).uses_lm for name in BESIDE_POLICY)


@pytest.mark.parametrize("name", BESIDE_POLICY)
def test_an_update_that_runs_beside_ppo_writes_nothing_of_the_batch_and_draws_nothing_from_numpy(name):
    """The learner's ``update_thread`` runs such an update while PPO trains on the same batch: it may only
    read the batch, and PPO shuffles its minibatches with numpy's global generator, which it must leave
    alone for a run to replay."""
    method = _method(name)
    batch = _crafter_batch(uids=[3, 4, 5, 6])
    before = ({k: v.clone() for k, v in batch.obs.items()}, batch.actions.clone(), batch.dones.clone())
    with torch.no_grad():
        method.reward(batch)
    np.random.seed(7)
    method.update(batch)
    assert np.random.randint(1 << 30) == np.random.RandomState(7).randint(1 << 30)
    assert all(torch.equal(batch.obs[k], v) for k, v in before[0].items())
    assert torch.equal(batch.actions, before[1]) and torch.equal(batch.dones, before[2])
