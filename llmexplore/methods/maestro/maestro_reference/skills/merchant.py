"""Merchant: trade with a shopkeeper."""

MAX_TURNS = 10000  # as published: 20 times the discoverer's 500 turns


def initiation(obs):
    return obs["nearby"]["shopkeeper"] > 0 and obs["num_items"] > 0


def termination(obs):
    if obs["depth"] != obs["skill_start"]["depth"]:
        return True
    if obs["features"]["shopkeeper"] == 0:
        return True  # no shopkeeper in view any more
    return obs["skill_turns"] >= MAX_TURNS
