"""MaestroMotif's NetHack skills and the functions generated code must define for them.

Each skill is a Motif goal of the same name (``configs/prompts/motif_preference/goals.yaml``;
the oracle judges it in ``envs/nethack/oracle.py``), so its reward model comes out of the Motif
pipeline unchanged. Its initiation and termination functions, and the policies over skills,
are written by an LM (``codegen.py``) against the interface of ``interface.py``.
"""

from __future__ import annotations

from llmexplore.errors import ConfigError
from llmexplore.methods.maestro.interface import OBS_FIELDS
from llmexplore.methods.maestro.sandbox import FunctionSpec

SKILLS = ("discoverer", "descender", "ascender", "worshipper", "merchant")

#: one line each, in our words, given to the LM with every code request
SKILL_DESCRIPTIONS = {
    "discoverer": "explores the current dungeon level: fights monsters, picks up gold and items, finds "
                  "hidden places, and does not take stairs",
    "descender": "finds a staircase down and takes it, reaching a deeper level",
    "ascender": "finds a staircase up and takes it, reaching a shallower level",
    "worshipper": "uses an altar, mainly by dropping items on it to learn whether they are blessed or cursed",
    "merchant": "trades with a shopkeeper: gets prices, sells and buys items, never steals",
}

INITIATION = FunctionSpec("initiation", ("obs",), (OBS_FIELDS,), returns="bool")
TERMINATION = FunctionSpec("termination", ("obs",), (OBS_FIELDS,), returns="bool")
POLICY = FunctionSpec("select_skill", ("obs", "memory"), (OBS_FIELDS, None), returns="skill",
                      state=("memory",))
#: the function each kind of code file defines
FUNCTIONS = {"initiation": INITIATION, "termination": TERMINATION, "select_skill": POLICY}

#: what each function must do, in words for the code prompt
CONTRACTS = {
    "initiation": "return True when the skill can start in this state, else False",
    "termination": "return True when the active skill should stop in this state (its goal is reached, it "
                   "cannot make progress, or another skill is needed), else False",
    "select_skill": "return the name of the next skill, one of obs['available']; keep any state you need "
                    "across calls in the dict memory (it starts empty each episode)",
}


def check_skills(skills: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The skills, in the canonical order, or a ConfigError naming the unknown one."""
    skills = tuple(skills)
    unknown = [s for s in skills if s not in SKILLS]
    if unknown:
        raise ConfigError(f"unknown skill '{unknown[0]}'", hint=f"skills: {', '.join(SKILLS)}")
    if not skills:
        raise ConfigError("no skills given", hint=f"skills: {', '.join(SKILLS)}")
    if len(set(skills)) != len(skills):
        raise ConfigError(f"skills listed twice in {list(skills)}")
    return tuple(s for s in SKILLS if s in skills)
