"""The Crafter family (crafter 1.8.3): the reward and reward-free tasks of its benchmark.

The score's reference points are the shipped table's means (``reference.py``,
``llmexplore/data/packaged/crafter/reference_scores.json``) to two decimals.
"""

from __future__ import annotations

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.crafter.stats import ACHIEVEMENT_KEYS, ACHIEVEMENTS
from llmexplore.envs.family import EnvFamily, Network, Normalization, ScreenFactory, StatsFile

NAME = "crafter"
BUDGET = 1_000_000  # Crafter's benchmark protocol

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
    networks={"small": Network("crafter", "llmexplore.agents.encoders:CrafterEncoder")},
    novelty_keys=("image",),
    normalization=Normalization(
        "score", 1.55, 50.53,
        "random agent 1.55 -> 0, human experts 50.53 -> 1 (Crafter's score of each seed of the published "
        "agents, averaged over 5 seeds; the scoreboard rounds them to 1.6 and 50.5)"),
    extra_columns=("achievements_unlocked", "reward"),
    achievements=ACHIEVEMENTS,
    # Crafter's own per-episode format, so its analysis scripts read our runs
    stats_file=StatsFile("stats.jsonl", ("length", "reward") + ACHIEVEMENT_KEYS),
    reference_steps_per_second=400,  # configs/crafter.yaml
    screen=ScreenFactory("llmexplore.viz.screens:ImageScreen", {"key": "image", "scale": 6}),
    data_sources=("crafter",),
)
