"""Worshipper: test items on an altar."""

MAX_TURNS = 10000  # as published: 20 times the discoverer's 500 turns


def initiation(obs):
    return obs["nearby"]["altar"] > 0 and obs["num_items"] > 0


def termination(obs):
    if obs["depth"] != obs["skill_start"]["depth"]:
        return True
    if obs["nearby"]["altar"] == 0 or obs["num_items"] == 0:
        return True  # the altar is out of reach, or nothing is left to test
    return obs["skill_turns"] >= MAX_TURNS
