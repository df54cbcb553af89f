"""Price identification: learn an item's price from a shopkeeper's offer."""


def select_skill(obs, memory):
    available = obs["available"]
    if "merchant" in available:
        return "merchant"
    if obs["depth"] < 2:
        return "descender"
    if obs["skill"] != "discoverer":
        return "discoverer"
    return "descender"
