"""``-t preset=<name>``: each environment family offers its own named training setups (EnvFamily.presets)."""

from __future__ import annotations

import pytest

from llmexplore.agents.train_config import TrainConfig, family_presets
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs.registry import get_family
from llmexplore.errors import ConfigError

#: stable-baselines3's PPO('CnnPolicy') for Crafter's 17 actions: NatureCNN (6,176 + 32,832 + 36,928 conv
#: weights and biases, 1,024 x 512 + 512 linear) = 600,736, policy head 512 x 17 + 17 = 8,721, value head 513
SB3_CNN_POLICY_PARAMETERS = 609_970


def test_each_family_owns_its_presets():
    assert set(family_presets("nethack")) == {"published", "light"}
    assert set(family_presets("crafter")) == {"published"}
    assert family_presets("housekeep") == {} and family_presets("unknown") == {}


def test_the_nethack_preset_is_motifs_and_onis_appo():
    train = TrainConfig(preset="published").resolved("nethack")
    assert (train.network, train.num_workers, train.envs_per_worker, train.batch_size, train.reward_scale,
            train.rnn_size, train.device, train.sf_args) == ("published", 24, 20, 4096, 0.1, 512, "gpu", {})


def test_the_crafter_preset_is_the_scoreboards_ppo():
    train = TrainConfig(preset="published").resolved("crafter")
    assert (train.network, train.num_workers, train.envs_per_worker, train.rollout, train.batch_size,
            train.learning_rate, train.gamma, train.serial) == (
        "published", 1, 16, 64, 2048, 3e-4, 0.99, True)
    sf = train.sf_args
    assert sf["batch_size"] * sf["num_batches_per_epoch"] == train.batch_size == 2048  # SB3's n_steps
    assert (sf["batch_size"], sf["num_epochs"], sf["shuffle_minibatches"]) == (64, 10, True)
    assert (sf["use_rnn"], sf["recurrence"], sf["ppo_clip_ratio"], sf["exploration_loss_coeff"]) == (
        False, 1, 0.2, 0)
    assert (sf["value_loss_coeff"], sf["max_grad_norm"], sf["adam_eps"], sf["gae_lambda"]) == (
        0.5, 0.5, 1e-5, 0.95)
    assert sf["ppo_clip_value"] >= 1e6 and sf["normalize_returns"] is False and sf["value_bootstrap"] is False


def test_the_runs_own_settings_win_and_sf_args_merge():
    train = TrainConfig(preset="published", learning_rate=1e-4,
                        sf_args={"max_grad_norm": 2.0, "kl_loss_coeff": 0.1})
    resolved = train.resolved("crafter")
    assert resolved.learning_rate == 1e-4 and resolved.batch_size == 2048
    assert resolved.sf_args["max_grad_norm"] == 2.0 and resolved.sf_args["kl_loss_coeff"] == 0.1
    assert resolved.sf_args["num_epochs"] == 10  # the preset's other options stay
    assert resolved.resolved("crafter") == resolved  # resolving twice changes nothing


@pytest.mark.parametrize("family, preset, offered", [
    ("crafter", "fast", "offer preset=published"), ("housekeep", "published", "offer no preset")])
def test_a_preset_the_family_does_not_offer_is_refused(family, preset, offered):
    refused = f"train.preset '{preset}' is not available for {family} tasks"
    with pytest.raises(ConfigError, match=refused) as info:
        TrainConfig(preset=preset).resolved(family)
    assert offered in info.value.hint


def test_resolving_a_spec_reports_an_unknown_preset_with_the_other_problems():
    spec = RunSpec(method="none", task="crafter:reward", steps=4096,
                   train={"preset": "fastest", "rollout": 3})
    with pytest.raises(ConfigError) as info:
        resolve(spec)
    fields = [field for field, _ in info.value.problems]
    assert "train.preset 'fastest' is not available for crafter tasks" in str(info.value)
    assert fields.count("train") >= 2  # the rollout problem is reported too


def test_a_minibatch_split_must_add_up_to_the_batch():
    spec = RunSpec(method="none", task="crafter:reward", steps=8192,
                   train={"preset": "published", "batch_size": 4096})
    with pytest.raises(ConfigError, match=r"64 x 32 = 2048 must equal train.batch_size 4096"):
        resolve(spec)
    fixed = spec.model_copy(update={"train": spec.train.model_copy(
        update={"sf_args": {"num_batches_per_epoch": 64}})})
    assert resolve(fixed).train.sf_args["num_batches_per_epoch"] == 64


def test_presets_name_networks_their_family_offers():
    for name in ("nethack", "crafter"):
        family = get_family(name)
        assert all(p.get("network", "small") in family.networks for p in family.presets.values())


def test_the_published_crafter_policy_has_sb3_cnn_policys_parameter_count(tmp_path):
    from sample_factory.algo.utils.env_info import extract_env_info
    from sample_factory.model.actor_critic import create_actor_critic

    from llmexplore.agents.run_settings import RunSettings
    from llmexplore.agents.sf_env import build_env
    from llmexplore.agents.training import build_sf_config, register_components

    run = resolve(RunSpec(method="none", task="crafter:reward", steps=8192, train={"preset": "published"}))
    assert run.encoder == "crafter-published"
    cfg = build_sf_config(run, tmp_path)
    settings = RunSettings.from_cfg(cfg)  # as each process of the engine reads it
    assert (cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_epochs, cfg.use_rnn, cfg.recurrence) == (
        64, 32, 10, False, 1)
    register_components()
    env = build_env(settings)
    try:
        env_info = extract_env_info(env, cfg)
    finally:
        env.close()
    assert env_info.action_space.n == 17
    policy = create_actor_critic(cfg, env_info.obs_space, env_info.action_space)
    parts = {name: sum(p.numel() for p in module.parameters()) for name, module in policy.named_children()}
    assert parts["encoder"] == 600_736 and parts["core"] == 0 and parts["decoder"] == 0
    assert parts["critic_linear"] == 513 and parts["action_parameterization"] == 8_721
    assert sum(p.numel() for p in policy.parameters()) == SB3_CNN_POLICY_PARAMETERS


def test_a_serial_run_is_not_stopped_for_a_long_training_step(tmp_path):
    """Serial runs share one event loop: the published preset's training step can outlast sample-factory's
    180 s heartbeat check on a loaded machine, which stopped healthy runs. Parallel runs keep the check."""
    from llmexplore.agents.training import SERIAL_HEARTBEAT_CHECK_SECONDS, build_sf_config

    spec = RunSpec(method="none", task="crafter:reward", steps=8192, train={"preset": "published"})
    serial = build_sf_config(resolve(spec), tmp_path)
    assert serial.serial_mode and serial.heartbeat_reporting_interval == SERIAL_HEARTBEAT_CHECK_SECONDS
    parallel_spec = spec.model_copy(update={"train": spec.train.model_copy(update={"serial": False})})
    parallel = build_sf_config(resolve(parallel_spec), tmp_path)
    assert not parallel.serial_mode and parallel.heartbeat_reporting_interval == 180
