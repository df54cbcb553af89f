"""The goal in the prompt must reach the trained reward model: held-out accuracy alone cannot show it
(models of two goals that order kills and gold alike both score 0.999), so this checks the orderings."""

from __future__ import annotations

import numpy as np
import pytest

from llmexplore.methods.motif.scorer import RewardScorer
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model
from tests.helpers.motif import ORACLE_ANNOTATOR, label_with_oracle
from tests.helpers.pairs import encode, make_dataset, make_pairs

KILL, GOLD, ROUTINE = "You kill the newt!", "$ - 12 gold pieces.", "You hear some noises in the distance."
BITTEN = "The jackal bites!"
MESSAGES = (KILL, GOLD, ROUTINE, BITTEN)


@pytest.fixture(scope="module")
def goal_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("goals")
    make_dataset(root / "pairs", make_pairs(4000, seed=0))
    models = {}
    for goal in ("gold", "combat"):
        label_with_oracle(root / "pairs", goal=goal)
        out = root / f"rm-{goal}"
        train_reward_model(root / "pairs", f"{ORACLE_ANNOTATOR}_msg_{goal}_default", out,
                           RewardTrainingOptions(lr=1e-3, batch_size=256, epochs=5, threads=1))
        z = RewardScorer(str(out)).normalized(np.stack([encode(m) for m in MESSAGES]))
        models[goal] = dict(zip(MESSAGES, z.tolist()))
    return models


def test_each_goal_model_ranks_its_own_key_event_first(goal_models):
    gold, combat = goal_models["gold"], goal_models["combat"]
    assert gold[GOLD] > gold[KILL] + 0.5 and gold[GOLD] > gold[ROUTINE] + 0.5, gold
    assert combat[KILL] > combat[GOLD] + 0.5 and combat[KILL] > combat[ROUTINE] + 0.5, combat
    # the other goal's key event is worth about as much as a routine message
    assert abs(gold[KILL] - gold[ROUTINE]) < 0.5 and abs(combat[GOLD] - combat[ROUTINE]) < 0.5


def test_no_goal_model_pays_for_being_bitten(goal_models):
    """A combat model that paid for bites (rule version 3) drove its agents into them: they died
    sooner and killed no more per episode than the gold agents."""
    for goal, z in goal_models.items():
        assert z[BITTEN] < z[ROUTINE] - 0.5, (goal, z)
