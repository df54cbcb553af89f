"""The ``maestro`` method and its skill wrapper on real NetHack envs: the skill key, call-and-return
switching, per-skill rewards from each skill's own model, metrics and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from llmexplore.agents.train_config import TrainConfig
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.sf_env import build_env
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.envs.nethack.text import encode_message
from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY
from llmexplore.errors import ConfigError, DataError
from llmexplore.lm.config import LMConfig
from llmexplore.lm.oracle import OracleLM
from llmexplore.methods import RewardBatch, get_method
from llmexplore.methods.maestro.codegen import generate_code, skill_targets, training_target
from llmexplore.methods.maestro.skills import SKILLS
from tests.unit.test_motif_method import make_reward_model_dir

SWITCHING_TERMINATION = "def termination(obs):\n    return obs['skill_steps'] >= 3\n"
ALTERNATING_POLICY = (
    "def select_skill(obs, memory):\n"
    "    if obs['skill'] == 'discoverer' and 'descender' in obs['available']:\n"
    "        return 'descender'\n"
    "    return 'discoverer'\n"
)


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("code")
    generate_code(root, OracleLM(), skill_targets() + [training_target()])
    return root


@pytest.fixture(scope="module")
def reward_dir(tmp_path_factory) -> tuple[Path, dict[str, dict[str, float]]]:
    root = tmp_path_factory.mktemp("rewards")
    z = {skill: make_reward_model_dir(root / skill, seed=i)[1] for i, skill in enumerate(SKILLS)}
    return root, z


def settings(code: Path, rewards: Path | str = "unused", run_dir: Path | str = ".", ext_coef: float = 0.0,
             int_coef: float = 0.1, **options) -> RunSettings:
    """A resolved maestro run made by hand (its reward models need not exist, as resolving would check)."""
    run = ResolvedRun(method="maestro", task="nethack:score", seed=3, steps=10_000, ext_coef=ext_coef,
                      int_coef=int_coef,
                      method_options={"reward_models": str(rewards), "code": str(code), **options},
                      train=TrainConfig(envs_per_worker=2, batch_size=64).resolved("nethack"), lm=LMConfig(),
                      label="maestro", encoder="nethack", policy_keys=("skill",))
    return RunSettings(run=run, run_dir=str(run_dir), device=run.device)


def play(env, steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    frames = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        frames.append(obs)
        if terminated or truncated:
            return frames, info[EPISODE_STATS_KEY]
    return frames, None


def test_wrapper_adds_the_skill_key_and_reports_skills_per_episode(code_dir):
    env = build_env(settings(code_dir))
    try:
        space = env.observation_space.spaces
        assert space["skill"].shape == (5,) and EPISODIC_MESSAGE_COUNT_KEY in space
        assert "glyphs" not in space and "inv_strs" not in space  # the wrapper's raw keys stay private
        frames, stats = play(env, 5000)
    finally:
        env.close()
    assert stats is not None
    onehots = np.stack([f["skill"] for f in frames])
    assert np.all(onehots.sum(1) == 1) and onehots[0, SKILLS.index("discoverer")] == 1
    steps = sum(stats[f"maestro_steps_{s}"] for s in SKILLS)
    assert steps == stats["length"] == len(frames) - 1
    assert stats["maestro_activations_discoverer"] >= 1 and stats["maestro_code_errors"] == 0


def switching_code(root: Path) -> Path:
    """Reference code whose skills each act three steps, discoverer and descender taking turns."""
    code = root / "code"
    generate_code(code, OracleLM(), skill_targets() + [training_target()])
    for skill in SKILLS:
        (code / f"skills/{skill}/termination.py").write_text(SWITCHING_TERMINATION)
    (code / "policies/training.py").write_text(ALTERNATING_POLICY)
    return code


def test_call_and_return_switching_and_counts_per_activation(code_dir, tmp_path):
    code = switching_code(tmp_path)
    env = build_env(settings(code, count_scope="activation"))
    try:
        frames, stats = play(env, 9, seed=1)
    finally:
        env.close()
    skills = [SKILLS[int(np.argmax(f["skill"]))] for f in frames]
    # each skill acts for three steps (skill_steps reaches 3), then the policy alternates
    assert skills == ["discoverer"] * 3 + ["descender"] * 3 + ["discoverer"] * 3 + ["descender"]
    assert [float(f["skill_started"][0]) for f in frames] == [1, 0, 0] * 3 + [1]
    assert stats is None
    counts = [float(f[EPISODIC_MESSAGE_COUNT_KEY][0]) for f in frames]
    messages = [bytes(f["message"]) for f in frames]
    # frame t's message is counted within the activation that acted at t - 1; counts restart after a switch
    for start in (3, 6):  # frames 4..6 belong to the activation that started after frame 3, and so on
        for t in range(start + 1, start + 4):
            assert counts[t] == sum(messages[u] == messages[t] for u in range(start + 1, t + 1)), (t, counts)


def make_batch(skills: list[list[str]], messages: list[list[str]], dones: list[list[int]],
               started: list[list[int]] | None = None, uids: list[int] | None = None) -> RewardBatch:
    """``started`` marks observations that begin an activation (default: where the skill changes)."""
    onehot = torch.stack([torch.stack([torch.eye(5)[SKILLS.index(s)] for s in row]) for row in skills])
    msg = torch.from_numpy(np.stack([[encode_message(m) for m in row] for row in messages]))
    counts = torch.ones(msg.shape[0], msg.shape[1], 1)
    d = torch.tensor(dones, dtype=torch.float32)
    if started is None:
        started = [[int(t == 0 or row[t] != row[t - 1]) for t in range(len(row))] for row in skills]
    obs = {"message": msg, "skill": onehot, EPISODIC_MESSAGE_COUNT_KEY: counts,
           "skill_started": torch.tensor(started, dtype=torch.float32)[..., None]}
    if uids is not None:
        obs["env_uid"] = torch.tensor(uids, dtype=torch.int32)[:, None, None].expand(-1, msg.shape[1], 1)
    return RewardBatch(obs=obs, actions=torch.zeros_like(d), dones=d)


def make_method(code: Path, rewards: Path, **options):
    run = settings(code, rewards, **options)
    cls, opts = run.method_class_and_options()
    env = build_env(run)
    space = env.observation_space
    env.close()
    return cls(opts, run.method_context(), space)


def test_each_transition_is_scored_by_the_model_of_the_skill_that_acted(code_dir, reward_dir):
    rewards, z = reward_dir
    method = make_method(code_dir, rewards, eps_quantile=0.0, eps_floor=None)
    messages = [["", "You kill the newt!", "It's a wall.", "You see here 3 gold pieces."]]
    skills = [["discoverer", "descender", "merchant", "merchant"]]
    r_int, r_hat, active = method.scored(make_batch(skills, messages, [[0, 0, 0]]))
    for t, skill in enumerate(skills[0][:3]):  # the skill of o_t scores the message of o_{t+1}
        assert r_hat[0, t].item() == pytest.approx(z[skill][messages[0][t + 1]], abs=1e-5)
        assert SKILLS[int(active[0, t])] == skill
    raw = [z[s][m] for s, m in zip(skills[0][:3], messages[0][1:])]
    assert r_int[0].tolist() == pytest.approx(raw, abs=1e-5)  # no threshold, counts of 1
    thresholded = make_method(code_dir, rewards)  # eps at the 0.5 quantile: 0 for these models
    kept, _, _ = thresholded.scored(make_batch(skills, messages, [[0, 0, 0]]))
    assert kept[0].tolist() == pytest.approx([v if v > 0 else 0.0 for v in raw], abs=1e-5)
    assert any(v <= 0 for v in raw) and any(v > 0 for v in raw)
    published = make_method(
        code_dir, rewards, eps_quantile=0.25, eps_floor=None
    )  # eps = -0.5: pays negatives
    paid, _, _ = published.scored(make_batch(skills, messages, [[0, 0, 0]]))
    assert paid[0].tolist() == pytest.approx([v if v > -0.5 else 0.0 for v in raw], abs=1e-5)
    floored = make_method(
        code_dir, rewards, eps_quantile=0.25
    )  # the default floor: only above-average messages
    paid, _, _ = floored.scored(make_batch(skills, messages, [[0, 0, 0]]))
    assert paid[0].tolist() == pytest.approx([v if v > 0 else 0.0 for v in raw], abs=1e-5)
    r = method.reward(make_batch(skills, messages, [[0, 1, 0]]))
    assert r[0, 1] == 0  # the step that ended the episode
    metrics = method.metrics()
    assert metrics["maestro_share_merchant"] == pytest.approx(0.5)  # live steps: discoverer, merchant
    assert metrics["maestro_rhat_discoverer"] == pytest.approx(
        z["discoverer"]["You kill the newt!"], abs=1e-5
    )
    assert "maestro_reward_descender" not in metrics and method.metrics() == {}


def test_resume_refuses_other_reward_models(code_dir, reward_dir):
    rewards, _ = reward_dir
    method = make_method(code_dir, rewards)
    state = method.state_dict()
    assert set(state["reward_models"]) == set(SKILLS) and len(state["code"]) == 16
    method.load_state_dict(state)
    with pytest.raises(DataError, match="other reward models for skill\\(s\\) descender"):
        method.load_state_dict({**state, "reward_models": {**state["reward_models"], "descender": "x"}})


def test_bad_input_stops_with_one_clear_message(code_dir, reward_dir, tmp_path):
    rewards, _ = reward_dir
    cls = get_method("maestro")
    from llmexplore.methods import parse_options

    with pytest.raises(ConfigError, match="unknown skill 'wizard'"):
        parse_options(cls, {"reward_models": str(rewards), "code": str(code_dir), "skills": ["wizard"]})
    spec = RunSpec(
        method="maestro",
        task="nethack:score",
        steps=4096,
        method_options={"reward_models": str(tmp_path / "none"), "code": str(code_dir)},
    )
    with pytest.raises(ConfigError, match="no reward model for skill 'discoverer'"):
        resolve(spec)
    spec = RunSpec(
        method="maestro",
        task="nethack:score",
        steps=4096,
        method_options={"reward_models": str(rewards), "code": str(tmp_path / "nocode")},
    )
    with pytest.raises(ConfigError, match="code folder .*nocode does not exist"):
        resolve(spec)
    bad = tmp_path / "bad"
    generate_code(bad, OracleLM(), skill_targets() + [training_target()])
    (bad / "skills/descender/termination.py").write_text(
        "import os\ndef termination(obs):\n    return True\n"
    )
    spec = RunSpec(
        method="maestro",
        task="nethack:score",
        steps=4096,
        method_options={"reward_models": str(rewards), "code": str(bad)},
    )
    with pytest.raises(ConfigError, match="termination.py does not pass validation: line 1: imports"):
        resolve(spec)
    with pytest.raises(ConfigError, match="NetHack tasks only"):
        resolve(
            RunSpec(
                method="maestro",
                task="crafter:reward",
                steps=4096,
                method_options={"reward_models": str(rewards), "code": str(code_dir)},
            )
        )


def test_each_episode_starts_with_a_fresh_skill_clock(code_dir, tmp_path):
    code = tmp_path / "code"
    generate_code(code, OracleLM(), skill_targets() + [training_target()])
    (code / "policies/training.py").write_text(
        "def select_skill(obs, memory):\n"
        "    stale = obs['skill_turns'] != 0 or obs['skill_steps'] != 0 or len(memory) > 0\n"
        "    if obs['skill'] == '' and stale:\n"
        "        return 'descender'\n"
        "    memory['calls'] = memory.get('calls', 0) + 1\n"
        "    return 'discoverer'\n"
    )
    env = build_env(settings(code))
    try:
        for episode in range(2):
            frames, stats = play(env, 6000, seed=episode)
            assert stats is not None
            assert SKILLS[int(np.argmax(frames[0]["skill"]))] == "discoverer", episode
            assert stats["maestro_activations_descender"] == 0
    finally:
        env.close()


def test_activation_returns_are_summed_across_batches_and_end_the_return(code_dir, reward_dir):
    rewards, z = reward_dir
    method = make_method(code_dir, rewards, eps_quantile=0.0, eps_floor=None)
    kill, gold = "You kill the newt!", "You see here 3 gold pieces."
    # env 7: a discoverer activation runs through both batches and ends when descender starts;
    # env 9: merchant hands over to merchant again (a new activation of the same skill), then the episode ends
    first = make_batch([["discoverer"] * 3, ["merchant"] * 3], [["", kill, gold], ["", gold, kill]],
                       [[0, 0], [0, 0]], started=[[1, 0, 0], [1, 0, 1]], uids=[7, 9])
    ends = method.return_ends(first)
    assert ends.tolist() == [[False, False], [False, True]]
    method.reward(first)
    second = make_batch([["discoverer", "discoverer", "descender"], ["merchant"] * 3],
                        [[gold, kill, ""], [kill, "", ""]], [[0, 0], [0, 1]], started=[[0, 0, 1], [0, 0, 1]],
                        uids=[7, 9])
    assert method.return_ends(second).tolist() == [[False, True], [False, False]]  # episode ends are not ours
    method.reward(second)
    metrics = method.metrics()
    d, m = z["discoverer"], z["merchant"]
    assert metrics["maestro_ended_discoverer"] == 1 and metrics["maestro_ended_merchant"] == 2
    # discoverer: "" -> kill -> gold in the first batch, gold -> kill -> "" in the second, then hands over;
    # merchant: one activation of two steps, then one of a step plus the episode's last (unpaid) step
    assert metrics["maestro_return_discoverer"] == pytest.approx(2 * d[kill] + d[gold] + d[""], abs=1e-4)
    assert metrics["maestro_return_merchant"] == pytest.approx((m[gold] + m[kill] + m[""]) / 2, abs=1e-4)
    assert "maestro_return_descender" not in metrics and metrics["maestro_ended_descender"] == 0
    episode = make_method(code_dir, rewards, returns="episode")
    assert episode.return_ends(first) is None


def test_the_learner_ends_returns_where_a_skill_hands_over_and_keeps_the_recurrent_state(reward_dir,
                                                                                         tmp_path):
    """sample-factory's own batch preparation in our learner: GAE sees each activation's end, while the
    recurrent replay (``dones_cpu``) sees episode ends only, as the actors did."""
    from sample_factory.algo.utils.env_info import extract_env_info
    from sample_factory.algo.utils.model_sharing import ParameterServer
    from sample_factory.algo.utils.shared_buffers import alloc_trajectory_tensors

    from llmexplore.agents.learner import IntrinsicLearner
    from llmexplore.agents.training import build_sf_config, register_components

    rewards, _ = reward_dir
    code = switching_code(tmp_path)
    prepared = {}

    class Spy(IntrinsicLearner):
        def _prepare_batch(self, batch):
            result = super()._prepare_batch(batch)
            prepared["buff"] = result[0]
            return result

    register_components()
    advantages = {}
    for returns in ("activation", "episode"):
        run = settings(code, rewards, run_dir=tmp_path / returns, ext_coef=1.0, int_coef=0.0, returns=returns)
        cfg = build_sf_config(run.run, run.run_dir)
        env = build_env(run)
        try:
            env_info = extract_env_info(env, cfg)
            frames, stats = play(env, 64, seed=2)
        finally:
            env.close()
        assert stats is None and len(frames) == 65
        batch = alloc_trajectory_tensors(env_info, 2, 32, cfg.rnn_size, torch.device("cpu"), False)
        for key, tensor in batch["obs"].items():
            for row in range(2):
                tensor[row] = torch.from_numpy(np.stack([f[key] for f in frames[32 * row:32 * row + 33]]))
        for key in ("rnn_states", "values", "actions", "action_logits", "log_prob_actions", "policy_version"):
            batch[key].zero_()
        batch["rewards"].fill_(1.0)  # c_ext 1, c_int 0: every transition pays 1
        batch["dones"].fill_(False)
        batch["policy_id"].fill_(0)
        batch["valids"].fill_(True)
        versions = torch.zeros(1, dtype=torch.int32)
        learner = Spy(cfg, env_info, versions, 0, ParameterServer(0, versions, serial_mode=True))
        learner.init()
        learner.train(batch)
        buff = prepared.pop("buff")
        assert float(buff["dones_cpu"].sum()) == 0  # the replay never resets the hidden state here
        advantages[returns] = buff["advantages"].reshape(2, 32)[:, :-1]  # the last step bootstraps from V
        starts = torch.stack([batch["obs"]["skill_started"][row, 1:, 0] for row in range(2)])[:, :-1].bool()
    assert 0 < int(starts.sum()) < starts.numel()
    # values are 0, so an advantage is the discounted sum of rewards until the return ends
    assert torch.allclose(advantages["activation"][starts], torch.ones(int(starts.sum())))
    assert bool((advantages["activation"][~starts] > 1.5).all())
    assert bool((advantages["episode"] > 1.5).all())
