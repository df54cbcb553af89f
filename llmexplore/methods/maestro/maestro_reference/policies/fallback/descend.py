"""A task about going down: find stairs down (exploring when none is in view) and take them."""


def select_skill(obs, memory):
    if obs["features"]["stairs_down"] == 0 and obs["skill"] != "discoverer":
        return "discoverer"
    return "descender"
