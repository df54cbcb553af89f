"""Training-time policy over skills: explore each level, then move down to a random target depth
and back up, taking every chance to trade or to use an altar (at most a few times per level).
As in the published training, half of the episodes (drawn at the start) first head for the
Gnomish Mines, whose staircase leaves the main dungeon at depth 2 to 4, and roam there."""

MAX_VISITS_PER_LEVEL = 3
LAST_BRANCH_DEPTH = 4


def select_skill(obs, memory):
    available = obs["available"]
    previous = obs["skill"]
    if "direction" not in memory:
        memory["target_depth"] = 2 + int(obs["rng"] * 3)  # 2, 3 or 4
        memory["direction"] = "down"
        memory["visits"] = {}
        memory["mines"] = obs["rng"] * 6 % 1 < 0.5  # half of the episodes, independent of the depth draw
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
    if memory["mines"] and obs["branch"] == "main":
        # look for the Mines: down to the branch levels, back up when past them
        if depth > LAST_BRANCH_DEPTH and "ascender" in available:
            return "ascender"
        if "descender" in available:
            return "descender"
    if memory["mines"] and obs["branch"] == "mines" and not memory.get("in_mines"):
        memory["in_mines"] = True  # roam the Mines: a few levels further down, then back up
        memory["direction"] = "down"
        memory["target_depth"] = depth + 1 + int(obs["rng"] * 2)
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
