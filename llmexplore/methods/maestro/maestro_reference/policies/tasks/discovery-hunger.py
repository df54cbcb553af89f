"""Discovery and hunger: reach the Gnomish Mines and eat there when hungry (the eat action answers
the food prompt by itself); explore the Mines while waiting to get hungry."""

LAST_BRANCH_DEPTH = 4


def select_skill(obs, memory):
    available = obs["available"]
    if obs["branch"] == "mines":
        return "discoverer"
    if obs["depth"] > LAST_BRANCH_DEPTH and "ascender" in available:
        return "ascender"
    if obs["skill"] != "discoverer" and obs["depth"] >= 2:
        return "discoverer"
    return "descender"
