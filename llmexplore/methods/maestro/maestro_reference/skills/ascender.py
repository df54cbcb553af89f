"""Ascender: reach a shallower level."""

GIVE_UP_TURNS = 1000


def initiation(obs):
    return obs["max_hitpoints"] > 0


def termination(obs):
    start = obs["skill_start"]
    if obs["depth"] != start["depth"] or obs["dungeon_number"] != start["dungeon_number"]:
        return True
    return obs["skill_turns"] >= GIVE_UP_TURNS
