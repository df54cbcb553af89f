"""The ``motif`` method: normalised reward, threshold, count division, masking, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.nethack.text import encode_message
from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY, EpisodicMessageCount
from llmexplore.errors import ConfigError, DataError
from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options
from llmexplore.methods.motif.artifacts import QUANTILES_FILE, save_reward_model
from llmexplore.methods.motif.model import MotifRewardModel

MESSAGES = ["", "You kill the newt!", "It's a wall.", "You see here 3 gold pieces."]


def make_reward_model_dir(path: Path, seed: int = 0) -> tuple[Path, dict[str, float]]:
    """A saved reward model with known statistics: mean/std of its rewards on MESSAGES, and
    z-scored quantiles of [-1, 0, 1] (so eps is 0 at the median, -0.5 at the 0.25 quantile)."""
    torch.manual_seed(seed)
    model = MotifRewardModel()
    with torch.no_grad():
        raw = {m: float(model(torch.from_numpy(encode_message(m))[None])) for m in MESSAGES}
    values = np.array(list(raw.values()))
    mean, var = float(values.mean()), float(values.var())
    path.mkdir(parents=True, exist_ok=True)
    save_reward_model(path, model, mean, var, 8, 4, np.array([-1.0, 0.0, 1.0]), {})
    return path, {m: (r - mean) / np.sqrt(var) for m, r in raw.items()}


def make_method(folder: Path, **options):
    task = get_task("nethack:score")
    cls = get_method("motif")
    opts = parse_options(cls, {"reward_model": str(folder), **options})
    context = MethodContext(task=task, seed=0, run_dir=Path("."))
    env = cls.wrap_env(make_adapter(task).make_env(), opts, context)
    space = env.observation_space
    env.close()
    return cls(opts, context, space)


def make_batch(messages: list[list[str]], counts: list[list[int]], dones: list[list[int]]) -> RewardBatch:
    msg = torch.from_numpy(np.stack([[encode_message(m) for m in row] for row in messages]))
    count = torch.tensor(counts, dtype=torch.float32)[..., None]
    d = torch.tensor(dones, dtype=torch.float32)
    return RewardBatch(obs={"message": msg, EPISODIC_MESSAGE_COUNT_KEY: count}, actions=torch.zeros_like(d), dones=d)


BATCH_MESSAGES = [["", "You kill the newt!", "You kill the newt!", "It's a wall."],
                  ["It's a wall.", "You see here 3 gold pieces.", "", "You kill the newt!"]]
BATCH_COUNTS = [[1, 1, 2, 1], [1, 1, 1, 3]]
BATCH_DONES = [[0, 0, 1], [0, 0, 0]]


def expected(z: dict[str, float], eps: float, beta: float = 3.0) -> torch.Tensor:
    """METHODS.md's formula written out step by step, independently of the method's batching."""
    out = torch.zeros(2, 3)
    for i in range(2):
        for t in range(3):
            m, n = BATCH_MESSAGES[i][t + 1], BATCH_COUNTS[i][t + 1]
            r_hat = z[m]
            r = r_hat / n**beta if r_hat > eps else 0.0
            out[i, t] = 0.0 if BATCH_DONES[i][t] else r
    return out


def test_reward_thresholds_divides_by_count_and_masks_episode_ends(tmp_path):
    folder, z = make_reward_model_dir(tmp_path / "rm")
    assert sum(v > 0 for v in z.values()) >= 1 and sum(v <= 0 for v in z.values()) >= 1
    method = make_method(folder)
    assert method.eps == pytest.approx(0.0)
    batch = make_batch(BATCH_MESSAGES, BATCH_COUNTS, BATCH_DONES)
    reward = method.reward(batch)
    assert reward.shape == (2, 3)
    assert torch.allclose(reward, expected(z, 0.0), rtol=1e-3, atol=1e-4)
    assert reward[0, 2] == 0  # this transition ended the episode
    # the cache gives the same values on the next batch, and the metrics say what happened
    assert torch.allclose(method.reward(batch), reward)
    metrics = method.metrics()
    assert metrics["motif_distinct_share"] == pytest.approx(4 / 6)
    assert metrics["motif_cache_hit_rate"] == pytest.approx(0.5)


def test_other_quantile_and_beta(tmp_path):
    folder, z = make_reward_model_dir(tmp_path / "rm")
    method = make_method(folder, eps_quantile=0.25, beta=1.0)
    assert method.eps == pytest.approx(-0.5)  # interpolated between the saved 0.2 and 0.3 points
    batch = make_batch(BATCH_MESSAGES, BATCH_COUNTS, BATCH_DONES)
    assert torch.allclose(method.reward(batch), expected(z, -0.5, beta=1.0), rtol=1e-3, atol=1e-4)
    no_threshold = make_method(folder, eps_quantile=0.0)
    assert torch.allclose(no_threshold.reward(batch), expected(z, -np.inf), rtol=1e-3, atol=1e-4)


def test_wrapper_is_the_count_wrapper(tmp_path):
    folder, _ = make_reward_model_dir(tmp_path / "rm")
    cls = get_method("motif")
    opts = parse_options(cls, {"reward_model": str(folder)})
    context = MethodContext(task=get_task("nethack:score"), seed=0, run_dir=tmp_path)
    env = cls.wrap_env(make_adapter("nethack:score").make_env(), opts, context)
    assert isinstance(env, EpisodicMessageCount) and env.env.__class__.__name__ == "NetHackEnv"  # message is NetHack's
    env.close()


def _resolve(options):
    return resolve(RunSpec(method="motif", task="nethack:score", steps=4096, method_options=options))


def test_missing_or_incomplete_reward_model_folder_stops_the_run_early(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        _resolve({"reward_model": str(tmp_path / "nope")})
    folder, _ = make_reward_model_dir(tmp_path / "rm")
    (folder / QUANTILES_FILE).unlink()
    with pytest.raises(ConfigError, match=f"incomplete: missing {QUANTILES_FILE}"):
        _resolve({"reward_model": str(folder)})
    with pytest.raises(ConfigError, match="reward_model"):
        _resolve({})
    with pytest.raises(ConfigError, match="eps_quantile"):
        _resolve({"reward_model": str(folder), "eps_quantile": 1.0})


def test_resuming_with_another_reward_model_is_refused(tmp_path):
    a, _ = make_reward_model_dir(tmp_path / "a", seed=0)
    b, _ = make_reward_model_dir(tmp_path / "b", seed=1)
    state = make_method(a).state_dict()
    make_method(a).load_state_dict(state)
    with pytest.raises(DataError, match="reward model"):
        make_method(b).load_state_dict(state)


def test_published_coefficients():
    cls = get_method("motif")
    assert cls.default_int_coef == 0.1
    assert get_task("nethack:score").default_ext_coef == 0.1
    assert get_task("nethack:staircase").default_ext_coef == 10.0
