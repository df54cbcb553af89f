"""Reference code (what the oracle answers) makes sensible choices on scripted game states."""

from __future__ import annotations

import pytest

from llmexplore.methods.maestro.oracle import reference_file
from llmexplore.methods.maestro.checking import check_code
from llmexplore.methods.maestro.interface import example_obs
from llmexplore.methods.maestro.skills import INITIATION, POLICY, SKILLS, TERMINATION
from llmexplore.methods.maestro.tasks import PUBLISHED_TASKS

ALL = SKILLS
MOVING = ("discoverer", "descender", "ascender")


def policy(kind: str, name: str):
    code = check_code(reference_file(kind, name).read_text(), (POLICY,))
    return lambda memory=None, **state: code.call(
        "select_skill", example_obs(**state), {} if memory is None else memory
    )


def skill(name: str):
    code = check_code(reference_file("skill", name).read_text(), (INITIATION, TERMINATION))
    return (lambda **s: code.call("initiation", example_obs(**s))), (
        lambda **s: code.call("termination", example_obs(**s))
    )


def test_every_published_task_has_a_reference_policy():
    for name in PUBLISHED_TASKS:
        assert reference_file("task", name).parent.name == "tasks"


def test_initiations():
    start_worship, _ = skill("worshipper")
    assert start_worship(nearby={"altar": 1}) and not start_worship(features={"altar": 1})
    assert not start_worship(nearby={"altar": 1}, inventory=(), num_items=0)
    start_trade, _ = skill("merchant")
    assert start_trade(nearby={"shopkeeper": 1}) and not start_trade()
    start_explore, _ = skill("discoverer")
    assert start_explore() and not start_explore(hitpoints=0, max_hitpoints=0)


def test_terminations():
    _, stop_descend = skill("descender")
    assert not stop_descend(skill_start={"depth": 1}, skill_turns=10)
    assert stop_descend(depth=2, skill_start={"depth": 1}, skill_turns=10)  # went down: done
    assert stop_descend(skill_turns=1000)  # gives up: stairs not found
    _, stop_ascend = skill("ascender")
    assert stop_ascend(depth=2, skill_start={"depth": 3}) and not stop_ascend(
        depth=3, skill_start={"depth": 3}
    )
    _, stop_explore = skill("discoverer")
    assert not stop_explore(skill_turns=100) and stop_explore(skill_turns=500)
    assert stop_explore(depth=2, skill_start={"depth": 1})  # left the level it was exploring
    assert stop_explore(nearby={"altar": 1}, skill_steps=30)  # hands over to the worshipper
    assert not stop_explore(nearby={"altar": 1}, skill_steps=5)  # ... but not right after starting
    _, stop_trade = skill("merchant")
    assert not stop_trade(features={"shopkeeper": 1}, skill_turns=10) and stop_trade(skill_turns=10)


@pytest.mark.parametrize("name", ["merchant", "worshipper"])
def test_trading_and_altar_skills_run_up_to_the_published_10000_turns(name):
    _, stop = skill(name)
    near = {"shopkeeper": 1, "altar": 1}
    assert not stop(features=near, nearby=near, skill_turns=9_999)
    assert stop(features=near, nearby=near, skill_turns=10_000)


def test_training_policy_heads_for_the_gnomish_mines_in_half_of_the_episodes():
    choose = policy("training policy", "training")
    draws = [i / 1000 for i in range(1000)]
    starts = []
    for rng in draws:
        memory: dict = {}
        choose(memory, skill="", available=MOVING, rng=rng)
        starts.append((memory["target_depth"], memory["mines"]))
    assert sum(m for _, m in starts) == 500
    for depth in (2, 3, 4):  # the Mines draw does not depend on the target depth
        half = sum(d == depth for d, _ in starts) / 2
        assert sum(m for d, m in starts if d == depth) == pytest.approx(half, abs=1)
    memory = {}
    choose(memory, skill="", available=MOVING, rng=0.0)  # a Mines episode, target depth 2
    assert memory["mines"]
    # in the main dungeon it goes down past its usual target, to the branch levels, and back up past them
    assert choose(memory, skill="discoverer", depth=3, available=MOVING) == "descender"
    assert choose(memory, skill="discoverer", depth=5, available=MOVING) == "ascender"
    # in the Mines it roams a few levels further down before turning back
    mines_level = dict(depth=4, dungeon_number=2, available=MOVING, rng=0.0)
    assert choose(memory, skill="discoverer", **mines_level) == "descender"
    assert memory["in_mines"] and memory["target_depth"] == 5
    assert choose(memory, skill="discoverer", depth=5, dungeon_number=2, available=MOVING) == "ascender"


def test_training_policy_explores_then_moves_down_and_back_up():
    choose = policy("training policy", "training")
    memory: dict = {}
    assert choose(memory, skill="", available=MOVING, rng=0.1) == "discoverer"  # target depth 2, main dungeon
    assert not memory["mines"]
    assert choose(memory, skill="discoverer", available=MOVING) == "descender"
    assert choose(memory, skill="descender", depth=2, available=MOVING) == "discoverer"
    assert choose(memory, skill="discoverer", depth=2, available=MOVING) == "ascender"  # reached the target
    assert choose(memory, skill="ascender", depth=1, available=MOVING) == "discoverer"
    assert choose(memory, skill="discoverer", depth=1, available=MOVING) == "descender"  # down again
    assert choose(memory, skill="discoverer", available=ALL) == "merchant"  # trading takes precedence
    assert (
        choose(memory, skill="merchant", available=ALL) == "worshipper"
    )  # then the altar, not trading again
    for _ in range(3):
        choose(memory, skill="discoverer", available=("discoverer", "worshipper"))
    assert (
        choose(memory, skill="discoverer", available=("discoverer", "worshipper")) != "worshipper"
    )  # capped


@pytest.mark.parametrize(
    "name,state,expected",
    [
        ("gnomish-mines", dict(skill="", available=MOVING), "descender"),
        ("gnomish-mines", dict(skill="descender", depth=3, available=MOVING), "discoverer"),
        ("gnomish-mines", dict(skill="discoverer", depth=3, available=MOVING), "descender"),
        (
            "gnomish-mines",
            dict(skill="descender", depth=6, available=MOVING),
            "ascender",
        ),  # passed the branch
        ("gnomish-mines", dict(skill="descender", depth=3, dungeon_number=2, available=MOVING), "discoverer"),
        (
            "delphi",
            dict(skill="descender", depth=3, available=MOVING),
            "discoverer",
        ),  # no stairs down seen yet
        (
            "delphi",
            dict(skill="descender", depth=3, features={"stairs_down": 1}, available=MOVING),
            "descender",
        ),
        (
            "delphi",
            dict(skill="descender", depth=4, dungeon_number=2, available=MOVING),
            "ascender",
        ),  # not in Mines
        ("delphi", dict(skill="descender", depth=7, features={"oracle": 1}, available=MOVING), "discoverer"),
        (
            "minetown",
            dict(
                skill="discoverer", depth=6, dungeon_number=2, features={"stairs_down": 1}, available=MOVING
            ),
            "descender",
        ),
        (
            "minetown",
            dict(skill="descender", depth=7, dungeon_number=2, features={"watchman": 2}, available=MOVING),
            "discoverer",
        ),
        ("transaction", dict(skill="discoverer", depth=3, available=ALL), "merchant"),
        (
            "transaction",
            dict(skill="discoverer", depth=1, available=MOVING),
            "descender",
        ),  # no shops on level 1
        ("price-id", dict(skill="descender", depth=2, available=MOVING + ("merchant",)), "merchant"),
        ("buc-id", dict(skill="discoverer", available=MOVING + ("worshipper",)), "worshipper"),
        (
            "buc-id",
            dict(skill="discoverer", features={"altar": 1}, available=MOVING),
            "discoverer",
        ),  # walk to it
        ("buc-id", dict(skill="discoverer", available=MOVING), "descender"),
        ("golden-exit", dict(skill="descender", depth=2, available=MOVING), "discoverer"),
        (
            "golden-exit",
            dict(skill="discoverer", kills=30, gold=50, max_depth=3, depth=2, available=MOVING),
            "ascender",
        ),
        ("level-up-and-sell", dict(skill="descender", experience_level=2, available=ALL), "discoverer"),
        (
            "level-up-and-sell",
            dict(skill="discoverer", max_experience_level=5, experience_level=5, available=ALL),
            "merchant",
        ),
        (
            "discovery-hunger",
            dict(skill="descender", depth=3, dungeon_number=2, available=MOVING),
            "discoverer",
        ),
    ],
)
def test_task_policies_choose_sensible_skills(name, state, expected):
    assert policy("task", name)(**state) == expected
