"""The oracle answers from prompt text alone, like an LM, through the same parser."""

from __future__ import annotations

import numpy as np
import pytest

from llmexplore.envs.crafter.oracle import RULES, goals_answer, parse_caption
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.errors import OracleError
from llmexplore.lm.oracle import UNRECOGNISED, OracleLM, register_oracle_kind
from llmexplore.lm.oracle import _ANSWERS as ORACLE_ANSWERS
from llmexplore.envs.crafter.oracle import RULES, goals_answer, parse_caption
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import EllmGoals, HousekeepPlacement
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, MotifPreference
from llmexplore.methods.oni.questions import OniClassification

P = SamplingParams()
KILL, GOLD, DOWN, HIT = "You kill the newt!", "$ - 12 gold pieces.", "There is a staircase down here.", "You hit the jackal."


def labels(goal, pairs, version="default"):
    result = ask(OracleLM(), MotifPreference(goal, version), pairs, P)
    assert result.unknown == 0 and result.retried == 0
    return result.labels


@pytest.mark.parametrize("version", ["default", "reworded"])
def test_goals_change_preferences(version):
    pairs = [(KILL, GOLD), (GOLD, DOWN), (HIT, DOWN), (DOWN, KILL)]
    assert labels("combat", pairs, version) == [LABEL_FIRST, LABEL_TIE, LABEL_FIRST, LABEL_SECOND]
    assert labels("gold", pairs, version) == [LABEL_SECOND, LABEL_FIRST, LABEL_TIE, LABEL_TIE]
    assert labels("stairs", pairs, version) == [LABEL_TIE, LABEL_SECOND, LABEL_SECOND, LABEL_FIRST]


def test_gold_and_combat_order_each_others_key_event_differently():
    """Reward models learn orderings: each goal's key event must not beat routine messages under the
    other goal, or both goals' models score kills and gold alike."""
    routine = ["You hear some noises in the distance.", "The door is closed.", ""]
    assert labels("gold", [(KILL, r) for r in routine]) == [LABEL_TIE] * 3
    assert labels("combat", [(GOLD, r) for r in routine]) == [LABEL_TIE] * 3
    assert labels("gold", [(GOLD, r) for r in routine]) == [LABEL_FIRST] * 3
    assert labels("combat", [(KILL, r) for r in routine]) == [LABEL_FIRST] * 3
    # only the hero's gold counts: a pet carrying coins about is routine
    pet = ["The little dog drops a gold piece.", "The kitten picks up a gold piece."]
    assert labels("gold", [(p, routine[0]) for p in pet]) == [LABEL_TIE] * 2
    swap = "You swap places with your kitten.  $ - a gold piece."
    assert labels("gold", [(swap, routine[0])]) == [LABEL_FIRST]
    # other items tie with routine messages under gold (rule version 3); gold on the floor does not
    items = ["You see here a dagger.", "f - an uncursed dagger."]
    assert labels("gold", [(i, routine[0]) for i in items]) == [LABEL_TIE] * 2
    assert labels("gold", [("You see here 7 gold pieces.", items[0])]) == [LABEL_FIRST]


@pytest.mark.parametrize("goal", ["combat", "gold", "defaultgoal"])
def test_a_monsters_attack_on_the_hero_is_no_progress_under_any_goal(goal):
    """Goals count what the hero does (rule version 4): being bitten is a loss and a monster's miss
    is routine, under combat too, while the hero's own attacks still count there."""
    routine = "You hear some noises in the distance."
    assert labels(goal, [("The jackal bites!", routine), ("The newt misses!", routine)]) == [
        LABEL_SECOND, LABEL_TIE]
    if goal == "combat":
        assert labels(goal, [(HIT, "The jackal bites!"), ("You miss the jackal.", routine)]) == [
            LABEL_FIRST, LABEL_FIRST]


def test_default_goal_prefers_progress_and_penalises_bad_events():
    pairs = [("Welcome to experience level 3.", "You hear some noises in the distance."),
             ("It's solid stone.", ""), ("", "You are beginning to feel hungry."),
             ("You hear some noises.", "The door is closed."), ("You kill the newt!", "You kill the jackal!")]
    assert labels("defaultgoal", pairs) == [LABEL_FIRST, LABEL_SECOND, LABEL_FIRST, LABEL_TIE, LABEL_TIE]


def test_answers_read_like_an_lm():
    oracle = OracleLM()
    prompt = MotifPreference("combat").prompt((KILL, GOLD))
    text = oracle.answer(prompt)
    reasoning, last = text.rsplit("\n", 1)
    assert last == "Preferred: 1" and "defeated a monster" in reasoning and len(reasoning.split()) > 10


def test_identical_captions_are_ties_without_a_call():
    class Counting(OracleLM):
        prompts_seen = 0

        def generate(self, prompts, params):
            Counting.prompts_seen += len(prompts)
            return super().generate(prompts, params)

    result = ask(Counting(), MotifPreference(), [(KILL, KILL), ("", ""), (KILL, GOLD)], P)
    assert result.labels[:2] == [LABEL_TIE, LABEL_TIE] and result.shortcuts == 2
    assert Counting.prompts_seen == 1


ROUTINE = ["You hear some noises in the distance.", "The door is closed.", ""]
DESCEND = "You climb down the stairs."


@pytest.mark.parametrize("goal, excluded", [
    ("combat", [GOLD, "You see here 7 gold pieces.", DOWN, DESCEND]),
    ("gold", [KILL, HIT, "Welcome to experience level 2.", DOWN, DESCEND]),
    ("stairs", [KILL, HIT, "Welcome to experience level 2.", GOLD, "You see here 7 gold pieces."]),
])
def test_goals_never_prefer_what_they_exclude(goal, excluded):
    """Motif's goals carry exclusions (rule version 5): under combat a gold pickup or a way down
    does not beat a routine message, and likewise for the other goals' excluded events."""
    for message in excluded:
        assert labels(goal, [(message, r) for r in ROUTINE]) == [LABEL_TIE] * 3, message
        assert labels(goal, [(r, message) for r in ROUTINE]) == [LABEL_TIE] * 3, message


def test_goal_sentences_state_the_exclusions():
    goals = MotifPreference().prompts.table("motif_preference", "goals")
    assert "never" in goals["combat"] and "gold" in goals["combat"] and "deeper" in goals["combat"]
    assert "never" in goals["gold"] and "monsters" in goals["gold"] and "deeper" in goals["gold"]
    assert "never" in goals["stairs"] and "monsters" in goals["stairs"] and "gold" in goals["stairs"]


@pytest.mark.parametrize("sentence, goal", [
    ("Prefer agents that engage in combat, for instance by killing monsters. But never prefer agents that "
     "collect ANY gold or that go down the dungeon.", "combat"),
    ("Prefer agents that maximize their gold. But never prefer agents that maximize the score in other ways "
     "(e.g., by engaging in combat or killing monsters) or that go down the dungeon.", "gold"),
    ("Prefer agents that go down the dungeon as much as possible. But never prefer agents that maximize the "
     "score (e.g., by engaging in combat) or that collect ANY gold.", "stairs"),
    ("Prefer agents that maximize the score in the game, for instance by killing monsters, collecting gold "
     "or going down the stairs in the dungeon.", "defaultgoal"),
])
def test_unknown_goal_sentences_are_read_before_their_exclusions(sentence, goal):
    from llmexplore.envs.nethack.oracle import goal_from_instruction

    assert goal_from_instruction(sentence, {}) == goal


def test_classification():
    """Only extremely helpful messages are helpful (as ONI labels them): a hidden passage is lukewarm."""
    result = ask(OracleLM(), OniClassification(), [KILL, "You find a hidden passage.", "This door is locked.",
                                                   "You hear some noises in the distance.", "", GOLD, HIT], P)
    assert result.labels == [1, 0, 0, 0, 0, 1, 0]


@pytest.mark.parametrize("goal, expected", [("defaultgoal", [1, 1, 1]), ("combat", [1, 0, 0]),
                                            ("gold", [0, 1, 0])])
def test_classification_goal_variants(goal, expected):
    question = OniClassification(goal)
    assert "extremely helpful" in question.prompt(KILL)
    result = ask(OracleLM(), question, [KILL, GOLD, DESCEND], P)
    assert result.labels == expected


def test_unknown_classification_goal_is_a_clear_error():
    from llmexplore.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown ONI classification goal 'stairs'"):
        OniClassification("stairs")


def test_crafter_goals_follow_prerequisites():
    assert parse_caption("You see grass, tree. You face tree. You have wood (3), wood pickaxe (1). You feel sleepy.").inventory == {
        "wood": 3, "wood_pickaxe": 1}
    result = ask(OracleLM(), EllmGoals(), [
        "You see grass, tree.",
        "You see crafting table, stone, tree. You face stone. You have wood (1), wood pickaxe (1).",
        "You see crafting table, furnace, iron. You have wood (1), coal (1), iron (1), stone pickaxe (1).",
        "You see water. You feel thirsty, sleepy.",
        "You see sand.",
    ], P)
    assert result.unknown == 0
    first, second, third, fourth, fifth = result.labels
    assert first == ["chop tree", "chop grass"]
    assert {"mine stone", "make wood pickaxe", "make wood sword", "chop tree"} <= set(second)
    assert "make stone pickaxe" not in second  # no stone held
    assert {"mine iron", "make iron pickaxe", "make iron sword"} <= set(third)
    assert fourth == ["drink water", "sleep"]
    assert fifth == []


def test_crafter_rules_match_the_installed_game():
    crafter = pytest.importorskip("crafter")
    import pathlib

    import yaml

    data = yaml.safe_load((pathlib.Path(crafter.__file__).parent / "data.yaml").read_text())
    rules = {goal: (objs, costs) for goal, objs, costs, _ in RULES}
    for name, info in data["make"].items():
        objs, costs = rules["make " + name.replace("_", " ")]
        assert costs == info["uses"] and set(objs) == {"crafting table" if n == "table" else n for n in info["nearby"]}
    for name, info in data["place"].items():
        goal = {"table": "place crafting table"}.get(name, f"place {name}")
        assert rules[goal][1] == info["uses"]
    for name, info in data["collect"].items():
        if info["require"]:
            goal = f"mine {name}"
            assert rules[goal][1] == info["require"]


def test_crafter_caption_from_the_real_captioner():
    pytest.importorskip("crafter")
    from llmexplore.envs.crafter.text import INVENTORY, SEMANTIC_NAMES, caption

    semantic = np.zeros((9, 9), dtype=np.int64)
    semantic[0, 0] = SEMANTIC_NAMES.index("tree")
    semantic[1, 1] = SEMANTIC_NAMES.index("table")
    inventory = np.zeros(len(INVENTORY), dtype=np.int64)
    inventory[:4] = 9
    inventory[INVENTORY.index("wood")] = 2
    text = caption({"local_semantic": semantic, "facing": np.array([SEMANTIC_NAMES.index("tree")]), "inventory": inventory})
    assert "- make wood pickaxe" in goals_answer(text) and "- place crafting table" in goals_answer(text)


def test_housekeep_is_an_extension_point():
    question = HousekeepPlacement()
    item = ("coffee mug", "kitchen cabinet", "kitchen")
    registered = ORACLE_ANSWERS.pop("housekeep_placement")  # the annotation-based answer, set aside for this test
    try:
        _extension_point(question, item)
    finally:
        ORACLE_ANSWERS["housekeep_placement"] = registered


def _extension_point(question, item):
    with pytest.raises(OracleError, match="no answer function for question kind 'housekeep_placement'"):
        OracleLM().answer(question.prompt(item))

    def answer(query):
        yes = query.fields["object"] == "coffee mug" and "cabinet" in query.fields["receptacle"]
        return f"Mugs live in cabinets.\nAnswer: {'yes' if yes else 'no'}"

    register_oracle_kind("housekeep_placement", answer)
    try:
        result = ask(OracleLM(), question, [item, ("towel", "oven", "kitchen")], P)
        assert result.labels == [True, False]
        with pytest.raises(OracleError, match="already"):
            register_oracle_kind("housekeep_placement", lambda q: "x")
    finally:
        del ORACLE_ANSWERS["housekeep_placement"]


def test_unrecognised_prompts_get_an_unparseable_answer_and_end_unknown():
    oracle = OracleLM()
    assert oracle.answer("What is the capital of France?") == UNRECOGNISED
    # a prompt from an edited template the oracle does not know: one retry, then unknown, counted
    question = MotifPreference()
    question.template = type(question.template)("Which is better? 1: \"{first}\" 2: \"{second}\" {goal_instruction}.", "x")
    result = ask(oracle, question, [(KILL, GOLD)], P)
    assert result.labels == [3] and result.unknown == 1 and result.retried == 1 and result.asked == 2


def test_logprobs_are_those_of_a_deterministic_model():
    out = OracleLM().generate([MotifPreference().prompt((KILL, GOLD))], SamplingParams(logprobs=1))[0]
    assert "".join(t.token for t in out.logprobs) == out.text
    assert all(t.logprob == 0.0 for t in out.logprobs)


def test_trigger_shortcut_never_changes_the_events():
    from llmexplore.envs.nethack.oracle import message_events, message_events_slow
    from tests.helpers.pairs import MESSAGES

    extra = ["You die...", "You slay the orc.", "The gnome lord is killed!", "You feel more experienced.",
             "There is a staircase going down here.", "You climb down the ladder.", "You fall through a trap door!",
             "You are hit by an arrow!", "The kobold hits!", "The jackal misses you.", "You faint from lack of food.",
             "You are beginning to feel weak.", "WHAMM!", "Never mind.", "You can't go up here.",
             "You don't have anything to eat.", "$ - 3 gold pieces.", "You now wield the long sword.",
             "There are several objects here.", "You enter an opulent throne room!", "There is a throne here.",
             "Things that are here:", "You see no objects here.", "Welcome to David's treasure zoo!",
             "YOU KILL IT!", "You miss the newt. You hit the newt.", "You ſlay the orc.",
             "Ünïcödé: you kill the newt!",
             "You climb up the stairs. There is a staircase down here.", "$ - 12 gold pieces (in 1 slot)."]
    for msg in MESSAGES + extra:
        assert message_events(msg) == message_events_slow(msg), msg
    assert sum(bool(message_events(m)) for m in extra) >= len(extra) - 2


def test_families_declare_the_kinds_they_answer_and_one_kind_has_one_family():
    """Game knowledge sits with its family (``EnvFamily.oracle_answers``), imported on the first question."""
    import subprocess
    import sys

    from llmexplore.envs import EnvFamily, Network, register_family, unregister_family
    from llmexplore.lm.oracle import FamilyAnswer, register_family_answers

    assert ORACLE_ANSWERS["motif_preference"].path == "llmexplore.envs.nethack.oracle:motif_answer"
    assert {k for k, v in ORACLE_ANSWERS.items() if isinstance(v, FamilyAnswer)} == {
        "motif_preference", "oni_classification", "ellm_goals", "housekeep_placement", "crafter_preference",
        "crafter_helpfulness", "maestro_code",
        "motif_preference@minihack", "oni_classification@minihack"}  # MiniHack answers its own goal
    code = ("import sys, llmexplore.lm.oracle; "
            "print([m for m in sys.modules if m.startswith('llmexplore.envs.') and m.endswith('.oracle')])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"

    def family(name: str, answers: dict[str, str]) -> EnvFamily:
        return EnvFamily(name=name, title=name.title(), adapter="m:A", extra="all", probe_module="numpy", tasks=(),
                         train_defaults={}, networks={"small": Network(name, "m:E")}, oracle_answers=answers)

    register_family(family("probe-a", {"probe_kind": "llmexplore.envs.crafter.oracle:ellm_goals_answer"}))
    try:
        register_family_answers()  # a family registered after the oracle was imported
        assert ORACLE_ANSWERS["probe_kind"].path == "llmexplore.envs.crafter.oracle:ellm_goals_answer"
        register_family_answers()  # again: nothing changes
        register_family(family("probe-b", {"probe_kind": "llmexplore.envs.nethack.oracle:oni_answer"}))
        with pytest.raises(OracleError, match="family 'probe-b' answers the question kind 'probe_kind'"):
            register_family_answers()
    finally:
        unregister_family("probe-a")
        unregister_family("probe-b")
        ORACLE_ANSWERS.pop("probe_kind", None)
