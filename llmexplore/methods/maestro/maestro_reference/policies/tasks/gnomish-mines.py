"""Gnomish Mines: enter the Mines, whose staircase leaves the main dungeon at depth 2 to 4."""

LAST_BRANCH_DEPTH = 4


def select_skill(obs, memory):
    available = obs["available"]
    if obs["branch"] == "mines":
        return "discoverer"
    if obs["depth"] > LAST_BRANCH_DEPTH and "ascender" in available:
        return "ascender"  # went past the branch levels: climb back and look for the other staircase
    if obs["skill"] != "discoverer" and obs["depth"] >= 2:
        return "discoverer"  # explore the level: the Mines staircase may be elsewhere on it
    return "descender"
