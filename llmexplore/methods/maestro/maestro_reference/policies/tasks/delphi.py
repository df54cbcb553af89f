"""Delphi: reach the Oracle, who lives on a level of the main dungeon at depth 5 to 9."""


def select_skill(obs, memory):
    available = obs["available"]
    if obs["branch"] != "main" and "ascender" in available:
        return "ascender"  # the Oracle is not in the Mines
    if obs["features"]["oracle"] > 0:
        return "discoverer"  # the Oracle is in view: walk up to the centre of the level
    if obs["features"]["stairs_down"] == 0 and obs["skill"] != "discoverer":
        return "discoverer"  # find a way down first
    return "descender"
