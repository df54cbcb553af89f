"""Any other task: explore each level, then go one deeper."""


def select_skill(obs, memory):
    if obs["skill"] != "discoverer":
        return "discoverer"
    return "descender"
