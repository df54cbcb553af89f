"""A task about altars: use one whenever it is near, else explore each level and go deeper."""


def select_skill(obs, memory):
    if "worshipper" in obs["available"]:
        return "worshipper"
    if obs["skill"] != "discoverer":
        return "discoverer"
    return "descender"
