"""Training-time policy over skills: explore each level, then move down to a random target depth
and back up, taking every chance to trade or to use an altar (at most a few times per level)."""

MAX_VISITS_PER_LEVEL = 3


def select_skill(obs, memory):
    available = obs["available"]
    previous = obs["skill"]
    if "direction" not in memory:
        memory["target_depth"] = 2 + int(obs["rng"] * 3)  # 2, 3 or 4
        memory["direction"] = "down"
        memory["visits"] = {}
    level = str(obs["dungeon_number"]) + ":" + str(obs["depth"])
    visits = memory["visits"]
    for skill in ("merchant", "worshipper"):
        key = skill + "@" + level
        if skill in available and previous != skill and visits.get(key, 0) < MAX_VISITS_PER_LEVEL:
            visits[key] = visits.get(key, 0) + 1
            return skill
    if previous != "discoverer" and "discoverer" in available:
        return "discoverer"
    depth = obs["depth"]
    if memory["direction"] == "down" and depth >= memory["target_depth"]:
        memory["direction"] = "up"
    if memory["direction"] == "up" and depth <= 1:
        memory["direction"] = "down"
        memory["target_depth"] = 2 + int(obs["rng"] * 3)
    if memory["direction"] == "up" and "ascender" in available:
        return "ascender"
    if "descender" in available:
        return "descender"
    return available[0]
