"""A task about going up or leaving: find stairs up and take them."""


def select_skill(obs, memory):
    if obs["features"]["stairs_up"] == 0 and obs["skill"] != "discoverer":
        return "discoverer"
    return "ascender"
