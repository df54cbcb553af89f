"""Two reward streams (``train.reward_streams=2``, agents/reward_streams.py): the two returns and advantages
against numbers worked out by hand, RND's normalisation of the bonus, each method's default, the runs the
option cannot apply to, and one-stream checkpoints and folders that keep loading."""

from __future__ import annotations

import json

import pytest
import torch
from pydantic import ValidationError

from llmexplore.agents.reward_streams import (INTRINSIC_HEAD, IntrinsicReturnNormalizer, RewardStreams,
                                              make_actor_critic, stream_targets)
from llmexplore.agents.resolved_run import RESOLVED_FILE, ResolvedRun
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError

# one env, three steps; its episode ends with step 1
R_EXT = torch.tensor([[1.0, 2.0, 4.0]])
R_INT = torch.tensor([[2.0, 4.0, 8.0]])
DONES = torch.tensor([[False, True, False]])
V_EXT = torch.tensor([[0.5, 1.0, 2.0, 4.0]])  # T+1 values: the last one bootstraps
V_INT = torch.tensor([[1.0, 1.0, 1.0, 2.0]])
VALIDS = torch.ones(1, 4, dtype=torch.bool)


def _streams(episodic: bool = False) -> RewardStreams:
    return RewardStreams(ext_coef=2.0, int_coef=1.0, gamma=0.5, episodic=episodic, gae_lambda=1.0)


def test_two_returns_and_advantages_match_a_hand_computed_example():
    """gamma 0.5 for both streams, lambda 1 (so GAE's advantage is the bootstrapped return minus the value),
    c_ext 2 and c_int 1 (RND's paper).

    Extrinsic, episodic (the return stops at the episode's end, step 1):
      G2 = 4 + 0.5 * V3 = 4 + 0.5 * 4 = 6;  G1 = 2 (the episode ended);  G0 = 1 + 0.5 * G1 = 2
      A_ext = G - V = [2 - 0.5, 2 - 1, 6 - 2] = [1.5, 1, 4]
    Intrinsic, non-episodic (the return runs on across the episode's end):
      G2 = 8 + 0.5 * 2 = 9;  G1 = 4 + 0.5 * 9 = 8.5;  G0 = 2 + 0.5 * 8.5 = 6.25
      A_int = [6.25 - 1, 8.5 - 1, 9 - 1] = [5.25, 7.5, 8]
    PPO follows 2 * A_ext + 1 * A_int = [3 + 5.25, 2 + 7.5, 8 + 8] = [8.25, 9.5, 16].
    """
    advantages_ext, returns_ext = stream_targets(R_EXT, DONES, V_EXT, VALIDS, 0.5, 1.0)  # sample-factory's GAE
    assert advantages_ext.tolist() == [[1.5, 1.0, 4.0]] and returns_ext.tolist() == [[2.0, 2.0, 6.0]]
    buff = {"advantages": advantages_ext.reshape(3)}
    _streams().add_targets(buff, R_INT, DONES, None, V_INT, VALIDS)
    assert buff["returns_int"].tolist() == [6.25, 8.5, 9.0]
    assert buff["values_int"].tolist() == [1.0, 1.0, 1.0]  # the old values, for the clipped value loss
    assert buff["advantages"].tolist() == [8.25, 9.5, 16.0]


def test_an_episodic_intrinsic_return_stops_at_the_episode_end_and_a_method_return_end_stops_both():
    """Episodic: G1 = 4, G0 = 2 + 0.5 * 4 = 4, so A_int = [3, 3, 8] and 2 * A_ext + A_int = [6, 5, 16].
    A return end of the method's at step 0 (a skill's hand-over) stops even the non-episodic return there:
    G0 = 2, A_int = [1, 7.5, 8]."""
    buff = {"advantages": torch.tensor([1.5, 1.0, 4.0])}
    _streams(episodic=True).add_targets(buff, R_INT, DONES, None, V_INT, VALIDS)
    assert buff["returns_int"].tolist() == [4.0, 4.0, 9.0] and buff["advantages"].tolist() == [6.0, 5.0, 16.0]
    buff = {"advantages": torch.zeros(3)}
    _streams().add_targets(buff, R_INT, DONES, torch.tensor([[True, False, False]]), V_INT, VALIDS)
    assert buff["returns_int"].tolist() == [2.0, 8.5, 9.0]


def test_the_bonus_is_divided_by_the_running_std_of_its_discounted_return_per_env_across_batches():
    """gamma 0.5, env 7 gets bonuses 1 then 2: returns 1 and 1 * 0.5 + 2 = 2.5, mean 1.75, variance 0.5625;
    merged into the prior (mean 0, variance 1, count 1e-4), Chan's merge gives the variance
    (1e-4 * 1 + 2 * 0.5625 + 1.75^2 * 1e-4 * 2 / 2.0001) / 2.0001 = 1.1254062 / 2.0001 = 0.562675, std 0.750117,
    so the bonuses become 1 / 0.750117 and 2 / 0.750117. The next batch continues the return: 2.5 * 0.5 + 0 = 1.25."""
    normalizer = IntrinsicReturnNormalizer(gamma=0.5, episodic=False)
    uids = torch.tensor([7]).numpy()
    out = normalizer(uids, torch.tensor([[1.0, 2.0]]), torch.tensor([[True, False]]))
    assert normalizer.std == pytest.approx(0.750117, abs=1e-6)
    assert out.reshape(-1).tolist() == pytest.approx([1 / 0.750117, 2 / 0.750117], rel=1e-5)
    normalizer(uids, torch.tensor([[0.0]]), torch.tensor([[False]]))
    assert normalizer.returns[7] == pytest.approx(1.25)  # across the episode's end at the first step
    episodic = IntrinsicReturnNormalizer(gamma=0.5, episodic=True)
    episodic(uids, torch.tensor([[1.0, 2.0]]), torch.tensor([[True, False]]))
    assert episodic.returns[7] == pytest.approx(2.0)  # restarted after the end
    restored = IntrinsicReturnNormalizer(gamma=0.5, episodic=False)
    restored.load_state_dict(normalizer.state_dict())
    assert restored.std == normalizer.std and restored.returns == normalizer.returns


def _resolve(method: str = "rnd", **changes) -> ResolvedRun:
    values = dict(method=method, task="crafter:reward-free", seed=0, steps=4096)
    values.update(changes)
    return resolve(RunSpec(**values))


@pytest.mark.parametrize("method, streams", [("rnd", 2), ("e3b", 1), ("noveld", 1), ("icm", 1), ("apt", 1),
                                             ("none", 1)])
def test_each_method_defaults_to_its_published_code_and_a_run_may_choose(method, streams):
    """The default holds for a spec given back whole too, as a fine-tuning child's is made from its parent's."""
    assert _resolve(method).train.reward_streams == streams
    given_back = RunSpec(method=method, task="crafter:reward-free", seed=0, steps=4096).model_dump()
    assert resolve(RunSpec(**given_back)).train.reward_streams == streams
    assert _resolve(method, int_coef=0.0).train.reward_streams == 1  # no bonus reaches PPO: no second head
    if method != "none":
        assert _resolve(method, train={"reward_streams": 3 - streams}).train.reward_streams == 3 - streams


@pytest.mark.parametrize("changes, message", [
    (dict(method="none", train={"reward_streams": 2}), "needs an intrinsic reward.*the method has no bonus"),
    (dict(int_coef=0.0, train={"reward_streams": 2}), "reward_streams=2 needs an intrinsic reward.*c_int is 0"),
    (dict(train={"reward_streams": 1, "intrinsic_gamma": 0.9}), "intrinsic_gamma applies to two reward streams"),
    (dict(train={"intrinsic_gamma": 1.0}), "intrinsic_gamma=1 with a non-episodic"),
    (dict(train={"intrinsic_gamma": 1.5}), "intrinsic_gamma"),
    (dict(train={"sf_args": {"with_vtrace": True, "normalize_returns": False}}), "V-trace"),
    (dict(train={"sf_args": {"actor_critic_share_weights": False}}), "actor_critic_share_weights"),
    (dict(train={"reward_streams": 3}), "reward_streams"),
])
def test_two_streams_are_refused_where_they_cannot_apply(changes, message):
    """Values out of range are refused where the spec is read (pydantic's error, which the command line and
    grid files turn into their messages), the rest where the run is resolved."""
    with pytest.raises((ConfigError, ValidationError), match=message):
        _resolve(**changes)


def test_a_folder_resolved_before_the_option_existed_is_a_one_stream_run(tmp_path):
    """Its resolved.json has no reward_streams: it trained one stream, and reads so (the committed
    crafter-1m RND rows pin reward_streams=1 to match such folders)."""
    fields = json.loads(_resolve(train={"reward_streams": 1}).model_dump_json())
    for name in ("reward_streams", "intrinsic_gamma", "intrinsic_episodic"):
        del fields["train"][name]
    (tmp_path / RESOLVED_FILE).write_text(json.dumps(fields))
    assert ResolvedRun.read(tmp_path).train.reward_streams == 1


def _network(run: ResolvedRun, folder):
    """The network the engine builds for ``run`` (sample-factory's config of the run, Crafter's spaces)."""
    import gymnasium as gym

    from llmexplore.agents.training import build_sf_config, register_components
    from llmexplore.envs import get_task, make_adapter

    register_components()
    cfg = build_sf_config(run, folder)
    space = make_adapter(get_task(run.task)).observation_space()
    return cfg, space, make_actor_critic(cfg, space, gym.spaces.Discrete(17))


def test_a_one_stream_checkpoint_loads_as_before_and_seeds_a_two_stream_network(tmp_path):
    """A one-stream run builds sample-factory's own network, so the weights older versions saved load
    strictly; a two-stream network has one more head, which a fine-tuning child starting from a one-stream
    parent leaves at its initial weights (``_start_from_parent`` loads the tensors both have)."""
    import gymnasium as gym
    from sample_factory.model.actor_critic import default_make_actor_critic_func

    cfg, space, one = _network(_resolve(train={"reward_streams": 1}), tmp_path / "one")
    old = default_make_actor_critic_func(cfg, space, gym.spaces.Discrete(17))  # what older versions built
    assert type(one) is type(old)
    one.load_state_dict(old.state_dict())  # strict
    _, _, two = _network(_resolve(), tmp_path / "two")
    missing = two.load_state_dict(old.state_dict(), strict=False).missing_keys
    assert missing == [f"{INTRINSIC_HEAD}.weight", f"{INTRINSIC_HEAD}.bias"]
    obs = {key: torch.zeros(2, *box.shape) for key, box in space.spaces.items()}
    result = two(obs, torch.zeros(2, cfg.rnn_size), values_only=True)
    assert result["values"].shape == (2,) and two.last_intrinsic_values.shape == (2,)


def test_the_committed_one_stream_rnd_rows_still_resume_and_the_two_stream_row_is_apart(tmp_path):
    """configs/crafter-1m.yaml pins one stream on its ``rnd`` rows, so a folder those rows trained before the
    option existed (its resolved.json without the new fields) is the grid's cell and resumes; left to RND's
    new default, the same cell would be another run and be refused. The published split is a row of its
    own, ``rnd-2streams``."""
    from pathlib import Path

    from llmexplore.benchmarks.grids.grid_file import load_grid
    from llmexplore.benchmarks.run.folder import adopt_folder

    repo = Path(__file__).resolve().parents[2]
    grid = load_grid(repo / "configs" / "crafter-1m.yaml", tmp_path / "out")
    cell = grid.cell("rnd/crafter:reward-free/seed0")
    assert cell.run.train.reward_streams == 1
    assert {c.run.train.reward_streams for c in grid.cells if c.spec.label == "rnd-2streams"} == {2}
    fields = json.loads(cell.run.model_dump_json())
    for name in ("reward_streams", "intrinsic_gamma", "intrinsic_episodic"):
        del fields["train"][name]
    folder = tmp_path / "rnd-seed0"
    folder.mkdir()
    (folder / RESOLVED_FILE).write_text(json.dumps(fields))
    adopt_folder(folder, cell.run)  # the folder's run: it resumes
    (folder / RESOLVED_FILE).write_text(json.dumps(fields))
    two = cell.run.model_copy(update={"train": cell.run.train.model_copy(update={"reward_streams": 2})})
    with pytest.raises(ConfigError, match=r"different run \(train.reward_streams: 1 before, 2 now"):
        adopt_folder(folder, two)
