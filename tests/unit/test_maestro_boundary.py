"""Generated code cannot reach host state (issue 37, class 1): it sees copies, its answers are checked
against what the host built, and its memory is taken back only as checked plain data, within the limit
across calls. Tested with code that tries to write into everything it is given."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from llmexplore.agents.sf_env import build_env
from llmexplore.lm.oracle import OracleLM
from llmexplore.methods.maestro.codegen import generate_code, skill_targets, training_target
from llmexplore.methods.maestro.interface import SKILL_START_FIELDS, example_obs
from llmexplore.methods.maestro.sandbox import CodeFailed, SandboxedCode
from llmexplore.methods.maestro.skills import POLICY, SKILLS, TERMINATION
from tests.unit.test_maestro_method import play, settings

#: writes into every dict it is handed, replaces fields with values of the wrong type, and adds a
#: new 500-item entry to the record of when the skill started on every call (a key the validator
#: cannot see, so state would grow across calls with no limit counting it)
MUTATING_TERMINATION = (
    "def termination(obs):\n"
    "    start = obs['skill_start']\n"
    "    start['time'] = 'not a number'\n"
    "    start['depth'] = [start['depth']]\n"
    "    start['grow' + str(obs['episode_steps'])] = [0] * 500\n"
    "    obs['features']['altar'] = 99\n"
    "    obs['time'] = None\n"
    "    obs['inventory'] = ['stolen']\n"
    "    return obs['skill_steps'] >= 3\n"
)
#: rewrites the list of available skills to make its wrong answer look right; grows its memory
MUTATING_POLICY = (
    "def select_skill(obs, memory):\n"
    "    memory['calls'] = memory.get('calls', 0) + 1\n"
    "    memory['junk' + str(memory['calls'])] = [0] * 300\n"
    "    obs['available'] = ('not-a-skill',)\n"
    "    obs['skill_start']['time'] = 'x'\n"
    "    if memory['calls'] % 2 == 0:\n"
    "        return 'not-a-skill'\n"
    "    return 'discoverer'\n"
)


def test_arguments_are_copies_and_answers_are_checked_against_the_hosts_own():
    code = SandboxedCode(MUTATING_TERMINATION, (TERMINATION,))
    obs = example_obs()
    before = copy.deepcopy(obs)
    for _ in range(3):
        code.call("termination", obs)
    assert obs == before  # nothing it wrote reached the caller's dict or the dicts inside it


def test_memory_comes_back_checked_and_stays_within_the_limit_across_calls():
    code = SandboxedCode(MUTATING_POLICY, (POLICY,))
    obs = dict(example_obs(), available=("discoverer", "descender"))
    memory: dict = {}
    assert code.call("select_skill", obs, memory) == "discoverer"
    assert memory["calls"] == 1 and len(memory["junk1"]) == 300
    kept = memory["junk1"]
    kept.append("host side")  # the host's copy is its own: the code's next call sees a fresh copy
    answers, failures = [], []
    for _ in range(8):
        try:
            answers.append(code.call("select_skill", obs, memory))
        except CodeFailed as exc:
            failures.append(exc.reason)
    assert failures and all("memory cannot be kept" in r and "2000 items" in r for r in failures)
    assert sum(len(v) for v in memory.values() if isinstance(v, list)) <= 2000  # the limit held across calls
    assert obs["available"] == ("discoverer", "descender")
    # a failing call leaves the memory as it was: half-done changes are not kept
    failing = SandboxedCode("def select_skill(obs, memory):\n    memory['x'] = 1\n    return 1 // 0\n", (POLICY,))
    memory = {"kept": 1}
    with pytest.raises(CodeFailed, match="ZeroDivisionError"):
        failing.call("select_skill", obs, memory)
    assert memory == {"kept": 1}
    # only plain data may be kept: not the code's own functions
    keeps_function = SandboxedCode(
        "def helper(x):\n    return x\n\ndef select_skill(obs, memory):\n    memory['f'] = helper\n"
        "    return obs['available'][0]\n", (POLICY,))
    with pytest.raises(CodeFailed, match="memory cannot be kept .*type function"):
        keeps_function.call("select_skill", obs, memory)
    assert memory == {}


def test_the_wrapper_survives_code_that_writes_into_everything_it_is_given(tmp_path):
    code = tmp_path / "code"
    generate_code(code, OracleLM(), skill_targets() + [training_target()])
    for skill in SKILLS:
        (code / "skills" / skill / "termination.py").write_text(MUTATING_TERMINATION)
    (code / "policies/training.py").write_text(MUTATING_POLICY)
    env = build_env(settings(code))
    try:
        frames, _ = play(env, 200)
        wrapper = env
        while type(wrapper).__name__ != "SkillWrapper":
            wrapper = wrapper.env
        assert set(wrapper._start) == set(SKILL_START_FIELDS)  # the host's record: untouched
        assert all(type(v) is int for v in wrapper._start.values()), wrapper._start
        assert wrapper.skill in SKILLS and all(np.sum(f["skill"]) == 1 for f in frames)
        assert wrapper.program.errors["policy"] > 0  # 'not-a-skill' was refused, not taken
        assert len(wrapper.memory) <= 2000
    finally:
        env.close()
