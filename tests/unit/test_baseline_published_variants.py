"""The published variants the baselines offer as options (docs/METHODS.md, Deviations), each checked
against an independent computation: E3B's φ output layer and gradient clipping, ICM's gradient clipping,
NovelD's predictor loss, its novelty N and reward normalisation, and ELLM's normalisation of RND's
language sum. Also: each option defaults to the behaviour before it existed, is listed, and refuses a
bad value by name."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.base import ENV_UID_KEY
from llmexplore.errors import ConfigError
from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options

CRAFTER = "crafter:reward-free"
CAPTION = "caption_embedding"
#: RunningMeanStd's starting point: a pseudo-count of 1e-4 at mean 0 and variance 1
PRIOR_COUNT = 1e-4


def _space(caption: bool = False) -> gym.spaces.Dict:
    space = make_adapter(get_task(CRAFTER)).observation_space()
    if not caption:
        return space
    return gym.spaces.Dict({**space.spaces, CAPTION: gym.spaces.Box(-1.0, 1.0, (8,), np.float32)})


def _method(name: str, caption: bool = False, **options: Any) -> Any:
    cls = get_method(name)
    context = MethodContext(task=get_task(CRAFTER), seed=0, run_dir=Path("."), num_actions=17)
    return cls(parse_options(cls, options), context, _space(caption))


def _batch(n: int = 4, t: int = 6, seed: int = 0, caption: bool = False) -> RewardBatch:
    """Crafter-shaped observations; ``inventory`` (and the caption embedding) as spread-out floats, so
    that the ±5 clip of the observation normalisation is reached."""
    g = torch.Generator().manual_seed(seed)
    obs: dict[str, torch.Tensor] = {}
    for key, space in _space(caption).spaces.items():
        if space.dtype == np.uint8:
            obs[key] = torch.randint(0, 255, (n, t + 1, *space.shape), generator=g).to(torch.uint8)
        else:
            obs[key] = torch.randint(0, 8, (n, t + 1, *space.shape), generator=g).float()
    obs["inventory"] = 3.0 * torch.randn(n, t + 1, 16, generator=g)
    if caption:
        obs[CAPTION] = 4.0 * torch.randn(n, t + 1, 8, generator=g)
    obs[ENV_UID_KEY] = torch.arange(n, dtype=torch.int32)[:, None, None].expand(n, t + 1, 1).clone()
    return RewardBatch(obs=obs, actions=torch.randint(0, 17, (n, t), generator=g), dones=torch.zeros(n, t))


class Welford:
    """Running mean and variance, one value at a time (Welford), from RunningMeanStd's prior."""

    def __init__(self, shape: Sequence[int] = ()):
        self.n = PRIOR_COUNT
        self.mean = torch.zeros(tuple(shape), dtype=torch.float64)
        self.m2 = PRIOR_COUNT * torch.ones(tuple(shape), dtype=torch.float64)

    def add(self, rows: torch.Tensor) -> None:
        for x in rows.detach().double().reshape(-1, *self.mean.shape):
            self.n += 1
            delta = x - self.mean
            self.mean = self.mean + delta / self.n
            self.m2 = self.m2 + delta * (x - self.mean)

    @property
    def std(self) -> torch.Tensor:
        return (self.m2 / self.n).sqrt()


def _mlp(net: nn.Module, x: torch.Tensor, weights: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
    """An ObservationFeatures network over flat keys (Linear, LeakyReLU, Linear), applied by hand with
    its own weights (or the given copies of them)."""
    w1, b1, w2, b2 = weights if weights is not None else (net.head[0].weight, net.head[0].bias,
                                                          net.head[2].weight, net.head[2].bias)
    return F.linear(F.leaky_relu(F.linear(x, w1, b1), 0.01), w2, b2)


def _normalised(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return ((x.double() - mean.double()) / std.double()).clamp(-5.0, 5.0).float()


# -- defaults, listing, refusals -----------------------------------------------------------------------

NEW_OPTIONS = [("e3b", "embedding_output", "linear"), ("e3b", "max_grad_norm", None),
               ("icm", "max_grad_norm", None), ("noveld", "predictor_loss", "mse"),
               ("rnd", "language_normalize", "per_term")]


@pytest.mark.parametrize("method,option,default", NEW_OPTIONS)
def test_each_published_variant_is_an_option_that_defaults_to_the_earlier_behaviour(method, option, default,
                                                                                    capsys):
    from llmexplore.cli import main

    field = get_method(method).Options.model_fields[option]
    assert field.default == default and field.description
    assert main(["methods", method, "--json"]) == 0
    rows = {row["option"]: row for row in json.loads(capsys.readouterr().out)["options"]}
    assert rows[option]["default"] == default and rows[option]["description"] == field.description


@pytest.mark.parametrize("method,values,named", [
    ("e3b", {"embedding_output": "tanh"}, ["embedding_output", "'linear'", "'relu'", "'layernorm'"]),
    ("noveld", {"predictor_loss": "l1"}, ["predictor_loss", "'mse'", "'norm'"]),
    ("rnd", {"language_normalize": "mean"}, ["language_normalize", "'per_term'", "'sum'"]),
    ("e3b", {"max_grad_norm": 0}, ["max_grad_norm", "greater than 0"]),
    ("e3b", {"max_grad_norm": -40.0}, ["max_grad_norm", "greater than 0"]),
    ("icm", {"max_grad_norm": float("nan")}, ["max_grad_norm", "finite"]),
    ("icm", {"max_grad_norm": float("inf")}, ["max_grad_norm", "finite"]),
    ("rnd", {"predictor_loss": "norm"}, ["predictor_loss"]),        # RND keeps its paper's MSE
    ("noveld", {"language_normalize": "sum"}, ["language_normalize"]),  # NovelD normalises one sum already
])
def test_bad_values_are_refused_naming_the_option_and_what_it_takes(method, values, named):
    with pytest.raises(ConfigError) as caught:
        parse_options(get_method(method), values)
    for text in named:
        assert text in caught.value.message


def test_published_values_are_accepted():
    assert parse_options(get_method("e3b"), {"max_grad_norm": 40}).max_grad_norm == 40.0
    assert parse_options(get_method("icm"), {"max_grad_norm": None}).max_grad_norm is None


# -- E3B: the layer that ends φ ------------------------------------------------------------------------

@pytest.mark.parametrize("output", ["linear", "relu", "layernorm"])
def test_e3b_embedding_output_ends_phi_with_the_published_layer(output):
    e3b = _method("e3b", embedding_output=output, embed_dim=8)
    embed = e3b.model.embed
    g = torch.Generator().manual_seed(5)
    gain, shift = 1.0 + torch.rand(8, generator=g), torch.randn(8, generator=g)
    if output == "layernorm":  # affine parameters away from 1 and 0, so that they are seen to apply
        with torch.no_grad():
            embed.final.weight.copy_(gain)
            embed.final.bias.copy_(shift)
    batch = _batch(n=2, t=3)
    obs = {k: v.reshape(-1, *v.shape[2:]) for k, v in batch.obs.items() if k != ENV_UID_KEY}
    with torch.no_grad():
        z = embed.out(embed.trunk(dict(obs)))  # the linear layer's output, [M, 8]
        phi = embed(obs)
    if output == "linear":
        expected = z
    elif output == "relu":
        expected = torch.where(z > 0, z, torch.zeros_like(z))
    else:
        mean = z.mean(dim=1, keepdim=True)
        variance = ((z - mean) ** 2).mean(dim=1, keepdim=True)
        expected = (z - mean) / torch.sqrt(variance + 1e-5) * gain + shift
    assert torch.allclose(phi, expected, atol=1e-5)
    parts = {key.split(".")[1] for key in e3b.state_dict()["model"] if key.startswith("embed.")}
    # the default's state keys are those of checkpoints saved before the option existed
    assert parts == ({"trunk", "out", "final"} if output == "layernorm" else {"trunk", "out"})
    copy = _method("e3b", embedding_output=output, embed_dim=8)
    copy.load_state_dict(e3b.state_dict())
    with torch.no_grad():
        assert torch.equal(copy.model.embed(obs), phi)


# -- E3B and ICM: gradient clipping --------------------------------------------------------------------

def _groups(name: str, method: Any) -> list[list[nn.Parameter]]:
    """The parameter groups each published code clips: E3B's φ and inverse head each on its own
    (IMPALA and sample-factory); ICM's networks together (Pathak et al.)."""
    if name == "e3b":
        return [list(method.model.embed.parameters()), list(method.model.inverse.parameters())]
    return [list(method.model.parameters()) + list(method.forward_model.parameters())]


@pytest.mark.parametrize("name", ["e3b", "icm"])
def test_max_grad_norm_scales_each_published_group_to_that_norm(name):
    limit = 1e-3
    batch = _batch(n=4, t=6)
    free, clipped = _method(name), _method(name, max_grad_norm=limit)
    free.update(batch)
    clipped.update(batch)
    for raw, got in zip(_groups(name, free), _groups(name, clipped)):
        grads = [p.grad.double() for p in raw]
        norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
        assert norm > 10 * limit  # the clip bites
        scale = limit / (norm + 1e-6)
        for g, p in zip(grads, got):
            assert torch.allclose(p.grad.double(), g * scale, rtol=1e-4, atol=1e-12)
        assert math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in got)) == pytest.approx(limit, rel=1e-3)


@pytest.mark.parametrize("name", ["e3b", "icm"])
def test_a_limit_above_the_gradient_norm_changes_nothing(name):
    batch = _batch(n=4, t=6)
    free, loose = _method(name), _method(name, max_grad_norm=1e9)
    free.update(batch)
    loose.update(batch)
    for raw, got in zip(_groups(name, free), _groups(name, loose)):
        assert all(torch.equal(a.grad, b.grad) for a, b in zip(raw, got))


# -- NovelD: predictor loss, novelty and normalisation ------------------------------------------------

@pytest.mark.parametrize("loss", ["mse", "norm"])
def test_noveld_predictor_loss_against_a_hand_computation(loss):
    noveld = _method("noveld", keys=("inventory",), predictor_loss=loss)
    batch = _batch(n=4, t=6, seed=2)
    before = [p.detach().clone() for p in (noveld.predictor.head[0].weight, noveld.predictor.head[0].bias,
                                           noveld.predictor.head[2].weight, noveld.predictor.head[2].bias)]
    x = batch.next_obs["inventory"].reshape(-1, 16)
    stats = Welford((16,))  # the update first folds the batch into the observation statistics
    stats.add(x)
    z = _normalised(x, stats.mean, stats.std)
    weights = [w.clone().requires_grad_(True) for w in before]
    with torch.no_grad():
        target = _mlp(noveld.target, z)
    difference = _mlp(noveld.predictor, z, weights) - target
    expected = difference.norm(dim=1).mean() if loss == "norm" else difference.pow(2).mean(dim=1).mean()
    hand_grads = torch.autograd.grad(expected, weights)
    metrics = noveld.update(batch)
    assert metrics["rnd_loss"] == pytest.approx(float(expected.detach()), rel=1e-5)
    got = [noveld.predictor.head[0].weight.grad, noveld.predictor.head[0].bias.grad,
           noveld.predictor.head[2].weight.grad, noveld.predictor.head[2].bias.grad]
    for mine, theirs in zip(hand_grads, got):
        assert torch.allclose(theirs, mine, rtol=1e-4, atol=1e-7)


def test_noveld_novelty_and_its_normalisation_against_hand_computations():
    """N = ‖f_pred(x) − f_target(x)‖₂ from the networks' own weights applied by hand; the reward over
    the running std of all rewards so far (this batch's included), kept by a hand Welford."""
    noveld = _method("noveld", keys=("inventory",), first_visit=False)  # α 0.5, normalised
    rewards = Welford()
    for seed in range(3):
        batch = _batch(n=3, t=5, seed=seed)
        batch.dones[1, 2] = 1
        # no update: the observation statistics stay at mean 0, variance 1, so inputs are clipped values
        x = batch.obs["inventory"].clamp(-5.0, 5.0)
        with torch.no_grad():
            novelty = (_mlp(noveld.predictor, x) - _mlp(noveld.target, x)).pow(2).sum(dim=-1).sqrt()
        assert torch.allclose(noveld.novelty(batch.obs), novelty, rtol=1e-5, atol=1e-6)
        raw = (novelty[:, 1:] - 0.5 * novelty[:, :-1]).clamp_min(0.0) * (batch.dones == 0)
        rewards.add(raw.reshape(-1))
        expected = raw.double() / rewards.std
        assert torch.allclose(noveld.reward(batch).double(), expected, rtol=1e-5, atol=1e-7)


# -- RND with language: ELLM's normalisation of the weighted sum --------------------------------------

def _errors(method: Any, key: str, batch: RewardBatch) -> torch.Tensor:
    """Mean squared prediction error at s' [N, T], with the method's observation statistics and
    network weights applied by hand."""
    stats = method.obs_stats[key]
    x = _normalised(batch.next_obs[key], stats.mean, stats.var.sqrt().clamp_min(1e-8))
    with torch.no_grad():
        return (_mlp(method.predictor, x) - _mlp(method.target, x)).pow(2).mean(dim=-1)


def test_rnd_language_sum_divides_the_weighted_raw_sum_by_its_running_std():
    rnd = _method("rnd", caption=True, keys=("inventory",), language=True, language_normalize="sum")
    first, second = _batch(seed=3, caption=True), _batch(seed=4, caption=True)
    total = Welford()
    weighted = _errors(rnd, "inventory", first) + 0.5 * _errors(rnd.language, CAPTION, first)
    assert torch.allclose(rnd.reward(first), weighted, rtol=1e-5)  # the sum's std starts at 1
    total.add(weighted.reshape(-1))
    rnd.update(first)
    weighted = _errors(rnd, "inventory", second) + 0.5 * _errors(rnd.language, CAPTION, second)
    assert torch.allclose(rnd.reward(second).double(), weighted.double() / total.std, rtol=1e-5)
    # ... where the default weighs the two terms each over its own std
    per_term = _method("rnd", caption=True, keys=("inventory",), language=True)
    per_term.load_state_dict({k: v for k, v in rnd.state_dict().items() if k != "language_sum_stats"})
    own, caption = _errors(per_term, "inventory", second), _errors(per_term.language, CAPTION, second)
    expected = own / per_term.error_stats.std.float() + 0.5 * caption / per_term.language.error_stats.std.float()
    assert torch.allclose(per_term.reward(second), expected, rtol=1e-5)
    assert not torch.allclose(per_term.reward(second), rnd.reward(second), rtol=1e-3)


def test_rnd_language_sum_state_round_trip_and_older_checkpoints():
    rnd = _method("rnd", caption=True, keys=("inventory",), language=True, language_normalize="sum")
    batch = _batch(seed=5, caption=True)
    rnd.update(batch)
    assert "language_sum_stats" in rnd.state_dict()
    copy = _method("rnd", caption=True, keys=("inventory",), language=True, language_normalize="sum")
    copy.load_state_dict(rnd.state_dict())
    later = _batch(seed=6, caption=True)
    assert torch.equal(copy.reward(later), rnd.reward(later))
    # a checkpoint saved before the option existed (or with per_term) has no sum statistics: they start fresh
    older = _method("rnd", caption=True, keys=("inventory",), language=True)
    older.update(batch)
    assert "language_sum_stats" not in older.state_dict()
    resumed = _method("rnd", caption=True, keys=("inventory",), language=True, language_normalize="sum")
    resumed.load_state_dict(older.state_dict())
    assert float(resumed.sum_stats.count) == pytest.approx(PRIOR_COUNT)
