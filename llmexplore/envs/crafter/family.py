"""The Crafter family (crafter 1.8.3): the reward and reward-free tasks of its benchmark.

The score's reference points are the shipped table's means (``reference.py``,
``llmexplore/data/packaged/crafter/reference_scores.json``) to two decimals.
"""

from __future__ import annotations

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.crafter.stats import ACHIEVEMENT_KEYS, ACHIEVEMENTS
from llmexplore.envs.family import EnvFamily, MessageText, Network, Normalization, ScreenFactory, StatsFile

NAME = "crafter"
BUDGET = 1_000_000  # Crafter's benchmark protocol

#: ``-t preset=published``: stable-baselines3's PPO defaults, which the scoreboard's PPO row ran
#: (danijar/crafter-baselines, ppo/main.py), in sample-factory 2.1.1's option names. Our
#: ``batch_size`` is the samples per update; sample-factory's ``batch_size`` is the minibatch.
PUBLISHED_PPO = dict(
    network="published", num_workers=1, envs_per_worker=16, rollout=64, batch_size=2048,
    learning_rate=3e-4, gamma=0.99, reward_scale=1.0,
    sf_args=dict(
        batch_size=64, num_batches_per_epoch=32, num_epochs=10, shuffle_minibatches=True,
        use_rnn=False, recurrence=1,
        ppo_clip_ratio=0.2, ppo_clip_value=1e6,  # value clipping off, as clip_range_vf=None
        exploration_loss_coeff=0.0, value_loss_coeff=0.5, max_grad_norm=0.5, adam_eps=1e-5,
        normalize_returns=False, gae_lambda=0.95, nonlinearity="relu", value_bootstrap=False,
    ),
)

FAMILY = EnvFamily(
    name=NAME,
    title="Crafter",
    adapter="llmexplore.envs.crafter.adapter:CrafterAdapter",
    extra="crafter",
    probe_module="crafter",
    tasks=(
        TaskSpec(name=f"{NAME}:reward", family=NAME,
                 description="Crafter with its reward (+1 per new achievement, health changes)",
                 default_budget=BUDGET, default_ext_coef=1.0),
        TaskSpec(name=f"{NAME}:reward-free", family=NAME,
                 description="Crafter without reward (exploration/pretraining protocol)",
                 default_budget=BUDGET, reward_free=True, default_ext_coef=0.0),
    ),
    train_defaults=dict(envs_per_worker=16, batch_size=1024, gamma=0.99, reward_scale=1.0),
    networks={
        "small": Network("crafter", "llmexplore.envs.crafter.network:CrafterEncoder",
                         "a DQN-style CNN on the 64x64 image beside the inventory counts, sized for a CPU"),
        # the scoreboard PPO's network: stable-baselines3's CnnPolicy (NatureCNN on the image alone)
        "published": Network("crafter-published", "llmexplore.envs.crafter.network:CrafterPublishedEncoder",
                             "the scoreboard PPO's network: stable-baselines3's CnnPolicy on the image alone"),
    },
    # the scoreboard's PPO: stable-baselines3's PPO('CnnPolicy') with every default (2,048 env steps per
    # update, 10 epochs of 64-sample minibatches, lr 3e-4, ...) in sample-factory; docs/crafter.md
    presets={"published": PUBLISHED_PPO},
    preset_notes={"published": "the scoreboard's PPO: stable-baselines3's defaults (2,048 env steps per update, "
                               "10 epochs of 64-sample minibatches, lr 3e-4) and its network; docs/crafter.md"},
    novelty_keys=("image",),
    normalization=Normalization(
        "score", 1.55, 50.53,
        "random agent 1.55 -> 0, human experts 50.53 -> 1 (Crafter's score of each seed of the published "
        "agents, averaged over 5 seeds; the scoreboard rounds them to 1.6 and 50.5)"),
    extra_columns=("achievements_unlocked", "reward"),
    column_notes={"achievements_unlocked": "achievements unlocked at least once in an episode",
                  "reward": "Crafter's own reward summed over an episode (+1 per achievement unlocked, 0.1 per "
                            "health point gained or lost), recorded on every task, also where the agent is not "
                            "given it (reward-free)"},
    metric_ranges={"score": (0.0, 100.0), "success_*": (0.0, 100.0),
                   "achievements_unlocked": (0.0, float(len(ACHIEVEMENTS)))},
    achievements=ACHIEVEMENTS,
    # Crafter's own per-episode format, so its analysis scripts read our runs
    stats_file=StatsFile("stats.jsonl", ("length", "reward") + ACHIEVEMENT_KEYS),
    reference_steps_per_second=400,  # configs/crafter.yaml
    # `none`, 16 workers x 32 envs, batch 4,096, one H200 with 16 CPU cores (docs/GPU.md); bound by the env
    gpu_machine_steps_per_second={"*": 14_746},
    screen=ScreenFactory("llmexplore.viz.screens:ImageScreen", {"key": "image", "scale": 6}),
    data_sources=("crafter",),
    game_version_keys=("crafter",),
    oracle_answers={"ellm_goals": "llmexplore.envs.crafter.oracle:ellm_goals_answer",
                    "crafter_preference": "llmexplore.envs.crafter.progress:crafter_preference_answer",
                    "crafter_helpfulness": "llmexplore.envs.crafter.progress:crafter_helpfulness_answer"},
    # Motif and ONI judge ELLM's caption (what is in view, faced, held and felt), asked in Crafter's words
    message_text=MessageText("llmexplore.envs.crafter.messages:SOURCE",
                             questions={"motif_preference": "crafter_preference",
                                        "oni_classification": "crafter_helpfulness"}),
)
