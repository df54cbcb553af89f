"""Discoverer: make the most of the current level."""

EXPLORE_TURNS = 500
MIN_STEPS_BEFORE_HANDOVER = 20


def initiation(obs):
    return obs["max_hitpoints"] > 0


def termination(obs):
    start = obs["skill_start"]
    if obs["depth"] != start["depth"] or obs["dungeon_number"] != start["dungeon_number"]:
        return True  # it left the level it was exploring
    if obs["skill_turns"] >= EXPLORE_TURNS:
        return True
    # hand over to the worshipper or the merchant when their chance shows up
    chance = obs["nearby"]["altar"] > 0 or obs["nearby"]["shopkeeper"] > 0
    return chance and obs["num_items"] > 0 and obs["skill_steps"] >= MIN_STEPS_BEFORE_HANDOVER
