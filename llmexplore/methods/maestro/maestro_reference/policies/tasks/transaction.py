"""Transaction: buy or sell something in a shop; shops appear from depth 2 on."""


def select_skill(obs, memory):
    available = obs["available"]
    if "merchant" in available:
        return "merchant"
    if obs["depth"] < 2:
        return "descender"
    if obs["skill"] != "discoverer":
        return "discoverer"  # look for a shop on this level
    return "descender"
