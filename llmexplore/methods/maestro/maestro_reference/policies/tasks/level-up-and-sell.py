"""Level up and sell: reach an experience level by fighting, then sell an item to a shopkeeper."""

TARGET_LEVEL = 4


def select_skill(obs, memory):
    available = obs["available"]
    if obs["max_experience_level"] < TARGET_LEVEL:
        if obs["skill"] != "discoverer":
            return "discoverer"
        return "descender"  # deeper levels have more monsters to fight
    if "merchant" in available:
        return "merchant"
    if obs["skill"] != "discoverer" and obs["depth"] >= 2:
        return "discoverer"
    return "descender"
