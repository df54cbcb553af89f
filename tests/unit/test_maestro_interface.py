"""The observation interface generated code reads: built from real NLE arrays, documented once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nle import nethack

from llmexplore.envs.nethack.adapter import NetHackEnv
from llmexplore.methods.maestro.interface import (
    BLSTAT_NAMES,
    FEATURE_NAMES,
    FIELD_DOCS,
    OBS_FIELDS,
    EpisodeCounters,
    GroundMemory,
    example_obs,
    feature_counts,
    game_view,
)

REPO = Path(__file__).resolve().parents[2]


def test_blstat_names_follow_nle():
    assert len(BLSTAT_NAMES) == nethack.NLE_BLSTATS_SIZE
    for name, index in [
        ("depth", nethack.NLE_BL_DEPTH),
        ("gold", nethack.NLE_BL_GOLD),
        ("time", nethack.NLE_BL_TIME),
        ("dungeon_number", nethack.NLE_BL_DNUM),
        ("experience_level", nethack.NLE_BL_XP),
    ]:
        assert BLSTAT_NAMES[index] == name


def test_features_from_glyphs():
    glyphs = np.full((21, 79), nethack.GLYPH_CMAP_OFF + 19, dtype=np.int16)  # room floor
    glyphs[5, 5] = nethack.GLYPH_CMAP_OFF + 27  # altar
    glyphs[6, 6] = nethack.GLYPH_CMAP_OFF + 24  # staircase down
    glyphs[7, 7] = nethack.GLYPH_MON_OFF + 267  # shopkeeper
    glyphs[8, 8] = nethack.GLYPH_PET_OFF + 3
    glyphs[9, 9] = nethack.GLYPH_MON_OFF + 5  # the agent itself, left out
    counts = feature_counts(glyphs, agent=(9, 9))
    assert counts["altar"] == counts["stairs_down"] == counts["shopkeeper"] == counts["pets"] == 1
    assert counts["monsters"] == 0 and counts["objects"] == 0 and set(counts) == set(FEATURE_NAMES)


def test_ground_memory_remembers_the_square_the_agent_stepped_onto():
    floor, altar, agent = nethack.GLYPH_CMAP_OFF + 19, nethack.GLYPH_CMAP_OFF + 27, nethack.GLYPH_MON_OFF + 5
    newt = nethack.GLYPH_MON_OFF + 0
    stats = np.zeros(27, dtype=np.int64)

    def frame(x: int, y: int, covered: dict | None = None, level: int = 1):
        glyphs = np.full((21, 79), floor, dtype=np.int16)
        glyphs[5, 6] = altar
        for (row, col), glyph in (covered or {}).items():
            glyphs[row, col] = glyph
        glyphs[y, x] = agent
        b = stats.copy()
        b[0], b[1], b[24] = x, y, level
        return glyphs, b

    ground = GroundMemory()
    assert ground.update(*frame(5, 5)) == -1  # nothing known yet
    assert ground.update(*frame(6, 5)) == FEATURE_NAMES.index("altar")  # stepped onto the altar
    assert ground.update(*frame(6, 5)) == FEATURE_NAMES.index("altar")  # stays while the agent does
    counts = feature_counts(frame(6, 5)[0], agent=(5, 6), under=ground.under)
    assert counts["altar"] == 1 and counts["monsters"] == 0
    assert ground.update(*frame(7, 5)) == -1  # plain floor
    assert ground.update(*frame(7, 5, {(5, 6): newt})) == -1
    assert ground.update(*frame(6, 5)) == -1  # a newt stood on the altar: what is under it is not known
    assert ground.update(*frame(5, 5)) == -1
    ground.update(*frame(6, 5))
    assert ground.update(*frame(6, 5, level=2)) == -1  # another level: unknown until the agent moves


def test_view_of_a_real_game():
    env = NetHackEnv("score", extra_keys=("glyphs", "inv_strs"))
    try:
        obs, _ = env.reset(seed=1)
        view = game_view(obs["message"], obs["blstats"], obs["glyphs"], obs["inv_strs"])
    finally:
        env.close()
    assert view["depth"] == 1 and view["branch"] == "main" and view["time"] >= 1
    # the first message greets the player, unless the moon phase or the date has something to say
    # ("You are lucky!  Full moon tonight.", "Be careful!  New moon tonight.", Friday the 13th)
    assert any(text in view["message"] for text in ("welcome to NetHack", "moon tonight", "Friday the 13th"))
    assert view["num_items"] == len(view["inventory"]) > 0 and all(
        isinstance(i, str) for i in view["inventory"]
    )
    assert (
        view["features"]["pets"] == 1 and view["nearby"]["pets"] == 1
    )  # the starting pet is next to the agent
    assert all(isinstance(v, (int, str, tuple, dict)) for v in view.values())  # plain values only


def test_counters_follow_messages():
    counters = EpisodeCounters()
    view = example_obs(depth=1)
    counters.reset(view)
    counters.update(example_obs(message="You kill the newt!  You kill the jackal!"), stepped=True)
    counters.update(example_obs(message="You sold a dagger for 2 gold pieces.", depth=3), stepped=True)
    counters.update(example_obs(message="There is a black flash as the ring hits the altar."), stepped=True)
    assert counters.values == {
        "episode_steps": 3,
        "kills": 2,
        "items_sold": 1,
        "altar_tests": 1,
        "max_depth": 3,
        "max_experience_level": 1,
    }


def test_example_obs_has_every_documented_field_and_refuses_unknown_ones():
    obs = example_obs()
    assert set(obs) == set(FIELD_DOCS) == set(OBS_FIELDS)
    with pytest.raises(KeyError):
        example_obs(dlvl=3)
    with pytest.raises(KeyError):
        example_obs(features={"upstairs": 1})


def test_the_prompt_and_the_docs_document_every_field():
    prompt = (REPO / "configs/prompts/maestro_code/default.txt").read_text()
    docs = (REPO / "docs/maestro.md").read_text()
    for name in list(FIELD_DOCS) + list(FEATURE_NAMES):
        assert name in prompt, name
        assert f"`{name}`" in docs or name in docs, name
