"""Minetown: the town three or four levels into the Gnomish Mines (watchmen, temple, shops)."""

LAST_BRANCH_DEPTH = 4


def select_skill(obs, memory):
    available = obs["available"]
    features = obs["features"]
    if obs["branch"] == "mines":
        if features["watchman"] > 0 or features["priest"] > 0 or features["shopkeeper"] > 0:
            return "discoverer"  # in town
        if obs["skill"] != "discoverer" and features["stairs_down"] == 0:
            return "discoverer"
        return "descender"
    if obs["depth"] > LAST_BRANCH_DEPTH and "ascender" in available:
        return "ascender"
    if obs["skill"] != "discoverer" and obs["depth"] >= 2:
        return "discoverer"
    return "descender"
