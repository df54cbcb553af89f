"""RunningMeanStd: the byte histogram path and the in-place normalisation give what the plain formulas give."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch

from llmexplore.methods.common import RunningMeanStd, byte_moments, float32_values


def _images(seed: int, count: int = 64) -> torch.Tensor:
    """Skewed uint8 images [count, 16, 16, 3] (most values low, a few at 255), like game frames."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(count, 16, 16, 3, generator=g) ** 3 * 200).to(torch.uint8)
    x[:, 0, 0, 1] = 255
    return x


def test_byte_moments_match_a_float64_mean_and_variance():
    x = _images(0).reshape(-1, 3)
    mean, var, n = byte_moments(x)
    direct = x.to(torch.float64)
    assert n == x.shape[0]
    torch.testing.assert_close(mean, direct.mean(0), rtol=1e-12, atol=0)
    torch.testing.assert_close(var, direct.var(0, unbiased=False), rtol=1e-12, atol=0)


def test_uint8_updates_track_the_float_path_over_several_batches():
    by_bytes, by_floats = RunningMeanStd((3,)), RunningMeanStd((3,))
    for seed in range(4):
        x = _images(seed, count=16 * (seed + 1))
        by_bytes.update(x)
        by_floats.update(x.float())  # float32 input: the float64 pass
    torch.testing.assert_close(by_bytes.mean, by_floats.mean, rtol=1e-12, atol=0)
    torch.testing.assert_close(by_bytes.var, by_floats.var, rtol=1e-12, atol=0)
    assert float(by_bytes.count) == float(by_floats.count)


def test_an_empty_byte_batch_changes_nothing():
    stats = RunningMeanStd((3,))
    stats.update(torch.zeros(0, 8, 8, 3, dtype=torch.uint8))
    assert float(stats.count) == pytest.approx(1e-4) and torch.equal(stats.mean, torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32, torch.float32, torch.float64])
def test_normalize_gives_the_bits_of_the_plain_float32_formula_and_leaves_its_input(dtype):
    stats = RunningMeanStd((3,))
    stats.update(_images(1))
    x = (_images(2).to(torch.float64) * 1.37 - 20).to(dtype)
    before = x.clone()
    plain = ((x.float() - stats.mean.float()) / stats.std.float()).clamp(-5, 5)
    assert torch.equal(stats.normalize(x, 5.0), plain)
    assert torch.equal(x, before)
    assert stats.normalize(x).dtype == torch.float32


def test_float32_values_round_as_float32_does():
    x = torch.tensor([16_777_217, 2**31 - 1, -3], dtype=torch.int64)
    assert torch.equal(float32_values(x), x.float().double())
    y = torch.tensor([0.1, 1e-40, 3.0], dtype=torch.float64)
    assert torch.equal(float32_values(y), y.float().double())


def test_an_empty_float_batch_changes_nothing_and_warns_nothing():
    stats = RunningMeanStd((5,))
    gc.collect()  # what earlier tests left behind warns when it is collected, not this update
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats.update(torch.zeros(0, 5))
    assert float(stats.count) == pytest.approx(1e-4) and not torch.isnan(stats.var).any()
    # a collection during the update may still finalise another test's leftovers: those are not this code's
    leftovers = (ResourceWarning, pytest.PytestUnraisableExceptionWarning)
    own = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
           for w in caught if not issubclass(w.category, leftovers)]
    assert not own, own
