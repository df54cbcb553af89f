"""The embedded oracle speaks MiniHack (issue 53): under the ``minihack`` goal ONI's classification and Motif's
preferences are answered by the MiniHack family's rules, asked the very prompt a real LM gets; every other goal
stays with NetHack's rules."""

from __future__ import annotations

import re

import numpy as np
import pytest

from llmexplore.envs.minihack import oracle as minihack_rules
from llmexplore.lm.oracle import OracleLM, answer_function
from llmexplore.lm.oracle.versions import rule_files
from llmexplore.lm.templates import load_prompts
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, MotifPreference
from llmexplore.methods.oni.questions import OniClassification

#: messages a uniformly random policy saw on KeyRoom-S5, MultiRoom-N2/N4, CorridorBattle, River,
#: LavaCross-Potion and Freeze-Horn (seeded rollouts, 60-200 episodes each), with the label the
#: ``minihack`` goal gives them
HELPFUL = [
    "g - a key named The Master Key of Thievery.",
    "h - a key named The Master Key of Thievery.",
    "The door opens.",
    "You kill the giant rat!",
    "You kill the giant rat!  The giant rat bites!",
    "You push the boulder into the water.  Now you can cross it!",
    "You start to float in the air!",
]
UNHELPFUL = [
    "",
    "It's a wall.",
    "It's solid stone.",
    "Never mind.",
    "There is nothing here to pick up.",
    "You see here a key named The Master Key of Thievery.",
    "This door is locked.",
    "The stairs are solidly fixed to the floor.",
    "You can't move diagonally into an intact doorway.",
    "It won't come off the hinges.",
    "The door resists!",
    "You hit the giant rat.  The giant rat misses!",
    "The giant rat bites!",
    "i - a giant rat corpse.",
    "f - a milky potion.",
    "With great effort you move the boulder.",
    "You try to move the boulder, but in vain.",
    "Pheew!  That was close.",
    "You see here an uncursed flint stone.",
    "What do you want to throw? [a or ?*] ",
    "In what direction? ",
    "There is a staircase up here.  You see here an uncursed flint stone.",
    "You float in the opposite direction.  Ouch!",
]


@pytest.fixture(scope="module")
def oracle() -> OracleLM:
    return OracleLM()


def verdict(oracle: OracleLM, message: str, goal: str = "minihack") -> int:
    question = OniClassification(goal=goal)
    return question.parse(oracle.answer(question.prompt(message))).value


def preferred(oracle: OracleLM, first: str, second: str, goal: str = "minihack") -> int:
    question = MotifPreference(goal=goal)
    return question.parse(oracle.answer(question.prompt((first, second)))).value


def test_oni_labels_only_the_steps_that_open_the_way_to_the_stairs_helpful(oracle):
    assert [verdict(oracle, m) for m in HELPFUL] == [1] * len(HELPFUL)
    assert [verdict(oracle, m) for m in UNHELPFUL] == [0] * len(UNHELPFUL)


def test_the_goal_sentence_s_examples_get_the_labels_the_sentence_gives_them(oracle):
    """The LM reads the examples in the goal's sentence; the stand-in must agree with them."""
    sentence = load_prompts().table("oni_classification", "goals")["minihack"]
    helpful_part, unhelpful_part = sentence.split("are extremely helpful")
    helpful = re.findall(r'"([^"]+)"', helpful_part.split("For example,")[1])
    unhelpful = re.findall(r'"([^"]+)"', unhelpful_part)
    assert len(helpful) == 4 and len(unhelpful) == 3
    assert [verdict(oracle, m) for m in helpful] == [1] * 4
    assert [verdict(oracle, m) for m in unhelpful] == [0] * 3


def test_the_threshold_is_onis_extremely_helpful_and_nothing_lukewarm_passes(oracle):
    value = minihack_rules.message_value
    assert minihack_rules.HELPFUL_VALUE == 2.0
    # a kill that cost a bite sits on the threshold and passes; a key on the floor is lukewarm and does not
    assert value("You kill the giant rat!  The giant rat bites!") == 2.0
    assert verdict(oracle, "You kill the giant rat!  The giant rat bites!") == 1
    assert 0 < value("You see here a key named The Master Key of Thievery.") < 2.0
    assert 0 < value("With great effort you move the boulder.") < 2.0
    assert value("There is a staircase down here.") >= 2.0  # the goal itself
    assert value("You die...") < 0 and value("It's a wall.") < 0


def test_other_goals_stay_with_nethack_s_rules(oracle):
    """Under ONI's published goal (NetHack's score) a key is lukewarm and a door neutral, as before."""
    from llmexplore.envs.nethack import oracle as nethack_rules

    key = "g - a key named The Master Key of Thievery."
    assert verdict(oracle, key, "defaultgoal") == 0 and verdict(oracle, "The door opens.", "defaultgoal") == 0
    assert verdict(oracle, "You kill the giant rat!", "defaultgoal") == 1
    question = OniClassification(goal="defaultgoal")
    assert oracle.answer(question.prompt(key)) == nethack_rules.classification_answer(key, "defaultgoal")
    # a goal sentence that is not the minihack goal's (edited) goes to NetHack's rules
    fields = {"goal_instruction": "Reach the stairs.", "message": key}
    assert answer_function("oni_classification", fields, load_prompts()).path.startswith("llmexplore.envs.nethack")


def test_motif_preferences_rank_progress_toward_the_stairs(oracle):
    key, key_seen, door = ("g - a key named The Master Key of Thievery.",
                           "You see here a key named The Master Key of Thievery.", "The door opens.")
    assert preferred(oracle, key, key_seen) == LABEL_FIRST
    assert preferred(oracle, "It's a wall.", key_seen) == LABEL_SECOND
    assert preferred(oracle, door, "") == LABEL_FIRST
    assert preferred(oracle, "", "In what direction? ") == LABEL_TIE
    assert preferred(oracle, "This door is locked.", "") == LABEL_SECOND
    # the goal changes answers: under NetHack's gold goal a key ties with silence, under combat a door does
    assert preferred(oracle, key, "", "gold") == LABEL_TIE and preferred(oracle, door, "", "combat") == LABEL_TIE


def test_the_rules_are_part_of_the_oracle_s_versioned_rule_files():
    assert any(f.name == "oracle.py" and f.parent.name == "minihack" for f in rule_files())


def test_every_message_a_random_policy_meets_on_keyroom_and_multiroom_is_recognised():
    """A real message set: each message seeded random play prints on the tasks of the committed table
    matches a rule (no MiniHack message is judged by default as routine)."""
    pytest.importorskip("llmexplore.envs.minihack.compat", reason="needs pip install 'llmexplore[minihack]'")
    from llmexplore.envs.registry import make_adapter
    from llmexplore.envs.nethack.text import decode_message

    seen: set[str] = set()
    for task in ("minihack:keyroom-s5", "minihack:multiroom-n2"):
        env = make_adapter(task).make_env(seed=3)
        rng = np.random.default_rng(3)
        for _ in range(12):
            env.reset()
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
                done = terminated or truncated
                seen.add(decode_message(obs["message"]))
        env.close()
    seen.discard("")
    assert {"It's a wall.", "The door opens."} <= seen and len(seen) >= 6
    assert [m for m in sorted(seen) if not minihack_rules.message_events(m)] == []
