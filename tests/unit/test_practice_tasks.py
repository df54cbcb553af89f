"""MaestroMotif's practice task: real wizard-mode NetHack games set in a shop or beside an altar.

Every test plays real NLE games (no mocks): the scene must put what the worshipper's or the
merchant's initiation needs within reach, hide its own set-up from the agent, replay with the
same seed, and leave the game's rules as a normal game has them (death ends the episode).
"""

from __future__ import annotations

import numpy as np
import pytest
from nle import nethack

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.nethack import practice, tasks
from llmexplore.envs.nethack.adapter import NetHackEnv
from llmexplore.errors import ConfigError
from llmexplore.methods.maestro.interface import GroundMemory, game_view

KEYS = ("glyphs", "inv_strs")
MOVES = {(-1, -1): "nw", (0, -1): "n", (1, -1): "ne", (-1, 0): "w", (1, 0): "e", (-1, 1): "sw", (0, 1): "s",
         (1, 1): "se"}


def _view(obs) -> dict:
    return game_view(obs["message"], obs["blstats"], obs["glyphs"], obs["inv_strs"])


def _scene_env(scene: str) -> NetHackEnv:
    """The registered task's env limited to one scene."""
    env = NetHackEnv("maestro-practice", actions="maestro", extra_keys=KEYS)
    env.nle.scenes = (scene,)
    return env


@pytest.fixture(scope="module")
def shop():
    env = _scene_env("shop")
    obs, _ = env.reset(seed=0)
    yield env, obs
    env.close()


@pytest.fixture(scope="module")
def altar():
    env = _scene_env("altar")
    obs, _ = env.reset(seed=0)
    yield env, obs
    env.close()


def test_shop_scene_starts_inside_minetown_beside_a_shopkeeper(shop):
    env, obs = shop
    view = _view(obs)
    assert env.nle.scene == "shop"
    assert view["branch"] == "mines" and 5 <= view["depth"] <= 8  # Minetown: Mines level 3 or 4
    assert view["nearby"]["shopkeeper"] >= 1 and view["num_items"] > 0  # the merchant's initiation holds
    assert view["depth"] > 4  # deeper than any target of the training policy: it will climb


def test_altar_scene_starts_beside_an_altar_at_depth_5_to_8(altar):
    env, obs = altar
    view = _view(obs)
    assert env.nle.scene == "altar"
    assert view["branch"] == "main" and view["depth"] in practice.ALTAR_DEPTHS
    x, y = view["x"], view["y"]
    assert practice.ALTAR_GLYPH in obs["glyphs"][y - 1:y + 2, x - 1:x + 2]
    assert view["nearby"]["altar"] == 1 and view["num_items"] > 0  # the worshipper's initiation holds


def test_stepping_onto_the_altar_keeps_it_in_view_as_what_the_agent_stands_on():
    env = _scene_env("altar")
    try:
        obs, _ = env.reset(seed=0)
        ground = GroundMemory()
        view = game_view(obs["message"], obs["blstats"], obs["glyphs"], obs["inv_strs"], ground)
        assert view["here"] == "" and view["nearby"]["altar"] == 1
        x, y = view["x"], view["y"]
        rows, cols = np.nonzero(obs["glyphs"][y - 1:y + 2, x - 1:x + 2] == practice.ALTAR_GLYPH)
        obs, *_ = env.step(env.action_names.index(MOVES[(int(cols[0]) - 1, int(rows[0]) - 1)]))
        view = game_view(obs["message"], obs["blstats"], obs["glyphs"], obs["inv_strs"], ground)
        assert (view["x"], view["y"]) == (x + int(cols[0]) - 1, y + int(rows[0]) - 1)  # on the altar
        assert view["here"] == "altar" and view["nearby"]["altar"] == 1 and view["features"]["altar"] == 1
        assert _view(obs)["nearby"]["altar"] == 0  # without the memory the agent hides the altar
    finally:
        env.close()


def test_the_practice_items_are_what_the_drop_question_names_and_the_altar_tests_them():
    env = _scene_env("altar")
    yes = env.action_names.index("nw")  # the action bound to 'y' answers the task's questions
    try:
        obs, _ = env.reset(seed=0)
        kit_items = _view(obs)["num_items"] - len(practice.PRACTICE_ITEMS)
        x, y = int(obs["blstats"][0]), int(obs["blstats"][1])
        rows, cols = np.nonzero(obs["glyphs"][y - 1:y + 2, x - 1:x + 2] == practice.ALTAR_GLYPH)
        env.step(env.action_names.index(MOVES[(int(cols[0]) - 1, int(rows[0]) - 1)]))  # onto the altar
        seen = []
        for _ in practice.PRACTICE_ITEMS:
            obs, *_ = env.step(env.action_names.index("drop"))
            assert b"What do you want to drop?" in bytes(obs["message"])
            obs, *_ = env.step(yes)  # the task names the first listed item the hero did not start with
            seen += [bytes(obs["message"]).split(b"\0", 1)[0], *env.nle.more_messages]
        tested = [m for m in seen if b"flash" in m or b"lands on the altar" in m]
        assert len(tested) == len(practice.PRACTICE_ITEMS), seen  # each practice item hit the altar
        assert _view(obs)["num_items"] == kit_items
        env.step(env.action_names.index("drop"))
        obs, *_ = env.step(yes)  # only the kit is left: the task declines the question
        assert _view(obs)["num_items"] == kit_items
    finally:
        env.close()


@pytest.mark.parametrize("scene", ["shop", "altar"])
def test_the_set_up_never_reaches_the_agent(scene, shop, altar):
    env, obs = shop if scene == "shop" else altar
    assert not obs["message"].any()  # no wish, teleport or detection message
    assert env.nle.more_messages == [] and env.nle._steps == 0 and env.nle._frozen_steps == 0
    assert not env.nle.last_observation[env.nle._internal_index][1:4].any()  # no question waiting
    names = _view(obs)["inventory"]
    assert not any("monster detection" in n for n in names)  # the shop's detection potion was drunk
    assert sum("potion" in n for n in names) == 2 and sum("ring" in n for n in names) == 1  # kit + practice


def test_episode_stats_and_the_clock_start_at_the_first_agent_step():
    env = _scene_env("shop")
    try:
        env.reset(seed=0)
        _, reward, terminated, _, _ = env.step(env.action_names.index("search"))
        assert env._length == 1 and env._kills == 0 and not terminated
        assert reward in (0.0, -0.01)  # a search: no score; the penalty only if game time stood still
    finally:
        env.close()


def test_same_seed_same_scene_and_game_other_seeds_mix_the_scenes():
    first, second = (NetHackEnv("maestro-practice", extra_keys=KEYS) for _ in range(2))
    try:
        scenes = set()
        for seed in range(4):
            a, _ = first.reset(seed=seed)
            b, _ = second.reset(seed=seed)
            assert first.nle.scene == second.nle.scene
            assert np.array_equal(a["blstats"], b["blstats"]) and np.array_equal(a["glyphs"], b["glyphs"])
            scenes.add(first.nle.scene)
        assert scenes == set(practice.SCENES)
    finally:
        first.close()
        second.close()


def test_unseeded_episodes_differ():
    env = NetHackEnv("maestro-practice", extra_keys=KEYS)
    try:
        games = []
        for _ in range(2):
            env.reset()
            games.append(env.nle.nethack.get_current_seeds()[:2])
        assert games[0] != games[1]
    finally:
        env.close()


def test_death_ends_the_episode_despite_wizard_modes_die_question():
    env = _scene_env("altar")
    try:
        env.reset(seed=0)
        keys = practice.WizardKeys(env.nle)  # raw keys, as at reset: the amulet chokes in 6 turns
        amulet = keys.wish_item("cursed amulet of strangulation")
        keys.press("P", dismiss_more=False).press(amulet)
        messages = []
        for _ in range(40):
            obs, _, terminated, truncated, info = env.step(env.action_names.index("search"))
            messages += [bytes(obs["message"]).split(b"\0", 1)[0], *env.nle.more_messages]
            if terminated or truncated:
                break
        assert terminated and info["end_status"] == tasks.StepStatus.DEATH, messages
        assert info["episode_extra_stats"]["died"] == 1
        assert not any(b"you don't die" in m for m in messages)
    finally:
        env.close()


def test_orcish_town_falls_back_to_a_game_with_seeds_derived_from_the_episodes():
    env = _scene_env("shop")
    try:
        obs, _ = env.reset(seed=5)  # this episode's first game has Orcish Town: no shopkeeper
        assert env.nle.attempts == 2 and "Orcish Town" in env.nle.failures[0]
        assert _view(obs)["nearby"]["shopkeeper"] >= 1
        again, _ = env.reset(seed=5)
        assert env.nle.attempts == 2 and np.array_equal(obs["glyphs"], again["glyphs"])
    finally:
        env.close()


def test_wizard_mode_teleport_control_is_not_the_agents():
    env = _scene_env("altar")
    try:
        env.reset(seed=0)
        keys = practice.WizardKeys(env.nle)
        keys.wish("teleportation trap")  # under the hero
        trap = keys.position
        aside = practice._floor_beside(env.nle.last_observation[env.nle._glyph_index], *trap)[0]
        env.step(env.action_names.index(MOVES[(aside[0] - trap[0], aside[1] - trap[1])]))
        obs, *_ = env.step(env.action_names.index(MOVES[(trap[0] - aside[0], trap[1] - aside[1])]))
        # wizard mode asks where to go; the task answers as a normal game does: a random teleport
        assert keys.position != trap and b"Where do you want" not in bytes(obs["message"])
        before = keys.position
        env.step(env.action_names.index("search"))
        assert keys.position == before  # the agent's next action is an action, not a cursor move
    finally:
        env.close()


def test_bad_scene_names_are_refused():
    with pytest.raises(ConfigError, match="unknown practice scenes"):
        practice.NetHackPractice(scenes=("bazaar",))
    with pytest.raises(ConfigError, match="unknown NetHack character"):
        practice.character_options("monk")


def test_registered_with_maestro_actions():
    spec = get_task("nethack:maestro-practice")
    assert spec.options == {"task": "maestro-practice", "actions": "maestro"}
    env = make_adapter(spec).make_env()
    try:
        assert env.action_space.n == len(tasks.MAESTRO_ACTIONS)
        assert not any(a in tasks.MAESTRO_ACTIONS for a in (nethack.C("v"), nethack.C("w"), nethack.C("t")))
    finally:
        env.close()
