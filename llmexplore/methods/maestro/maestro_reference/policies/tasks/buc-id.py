"""BUC identification: learn whether an item is blessed, uncursed or cursed on an altar."""


def select_skill(obs, memory):
    available = obs["available"]
    if "worshipper" in available:
        return "worshipper"
    if obs["features"]["altar"] > 0 or obs["skill"] != "discoverer":
        return "discoverer"  # an altar is on the map (walk to it), or this level is not explored yet
    return "descender"
