"""Every operation of generated code is bounded, even single C-level calls (issue 28's battery).

Each snippet below ran unbounded, crashed the checker or was wrongly refused before the sandbox
weighed the values that reach C-level calls (comparisons, hashing, ``str()``, ``round()``,
``max()``, ``index()``), capped the formatting of values and errors from generated code and
bounded the walk over a policy's memory. Every hostile one must end in a clear refusal within
seconds, in this process and in a child under a 6 GB address-space limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from llmexplore.methods.maestro.checking import check_code
from llmexplore.methods.maestro.interface import example_obs
from llmexplore.methods.maestro.sandbox.boundary import NotPlain, plain_copy
from llmexplore.methods.maestro.sandbox import CodeFailed, CodeRejected, SandboxedCode
from llmexplore.methods.maestro.sandbox.isolation import IsolatedFailure, ProcessLimits, run_isolated
from llmexplore.methods.maestro.sandbox.sizing import describe_exception
from llmexplore.methods.maestro.skills import INITIATION, POLICY

#: (id, body of `def initiation(obs):`, words the refusal must contain)
HEAVY = [
    ("round-huge-negative", "return round(1, -10**9) == 0", "round() to 10**1000000000"),
    ("compare-shared-lists", "return [[0]*99999]*99999 == [[0]*99999]*99999", "a comparison of more than"),
    ("in-shared-lists", "return [0] * 5 in [[0]*99999]*99999", "a comparison of more than"),
    ("str-nested", "return len(str([[0]*99999]*2000)) > 0", "str() of a value of more than"),
    ("return-huge-tuple", "return ('a'*99999,)*99999", "it must return True or False"),
    ("keyerror-huge-key", "return obs[('a'*99999,)*99999]", "KeyError: ("),
    ("set-of-heavy-tuples", "return len(set([(0,)*99999]*99999)) > 0", "set() of a value of more than"),
    ("max-of-heavy-lists", "return max([[0]*99999]*99999) == []", "max() of a value of more than"),
    ("sorted-of-heavy-lists", "return sorted([[0]*99999]*99999) == []", "sorted() of a value of more than"),
    ("index-scan", "x = [[0]*99999]*99999\nreturn x.index([1]) == 0", "index() of a value of more than"),
    ("dict-get-heavy-key", "return obs.get(('a'*99999,)*99999) is None", "get() of a value of more than"),
    ("int-add-doubling", "x = 2**4000\nfor i in range(200):\n    x = x + x\nreturn x > 0", "4097 bits"),
    ("call-a-heavy-value", "x = ('a'*99999,)*99999\nreturn x()", "calling ("),
    ("obs-written-then-failing", "obs['skill'] = [[0]*99999]*99999\nreturn obs['depth'] // 0 > 1",
     "ZeroDivisionError"),
    ("obs-written-then-returned", "obs['message'] = ('a'*99999,)*99999\nreturn 5", "returned 5"),
]

POLICY_MEMORY = ("def select_skill(obs, memory):\n    memory['x'] = [[0]*99999]*99999\n"
                 "    return obs['available'][0]\n")


def _module(body: str) -> str:
    return "def initiation(obs):\n" + textwrap.indent(body, "    ") + "\n"


@pytest.mark.parametrize("body,reason", [pytest.param(b, r, id=n) for n, b, r in HEAVY])
def test_heavy_single_operations_are_refused_in_seconds(body, reason):
    started = time.perf_counter()
    with pytest.raises(CodeRejected) as info:
        check_code(_module(body), (INITIATION,))
    assert reason in info.value.reason, info.value.reason
    assert len(str(info.value)) < 1000  # formatted under a cap
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize("isolate", [True, False])
def test_the_checks_also_hold_in_process(isolate):
    with pytest.raises(CodeRejected, match="a comparison of more than"):
        check_code(_module(HEAVY[1][1]), (INITIATION,), isolate=isolate)


def test_a_policy_storing_a_heavy_memory_is_refused_and_the_memory_walk_is_bounded():
    started = time.perf_counter()
    with pytest.raises(CodeRejected, match="memory cannot be kept .*more than 2000 items"):
        check_code(POLICY_MEMORY, (POLICY,))
    with pytest.raises(NotPlain, match="more than 2000 items"):
        plain_copy({"x": [[0] * 99999] * 99999}, 2000)
    small = {"a": [1, 2], "b": ("x",)}  # dict 2 + list 2 + tuple 1
    assert plain_copy(small, 5) == small
    with pytest.raises(NotPlain, match="more than 4 items"):
        plain_copy(small, 4)
    assert time.perf_counter() - started < 5.0


def test_allowed_names_work_together():
    body = "return isinstance(obs, dict) and not isinstance(obs['depth'], (list, str))"
    code = SandboxedCode(_module(body), (INITIATION,))
    assert code.call("initiation", example_obs()) is True
    assert check_code(_module("return isinstance(obs['inventory'], list)"), (INITIATION,))


def test_errors_from_generated_code_are_described_under_a_cap():
    huge = KeyError(("a" * 99999,) * 99999)
    text = describe_exception(huge)
    assert text.startswith("KeyError: (") and len(text) <= 300
    assert describe_exception(ValueError("x" * 10**6)).endswith("...")


def test_the_outer_guard_kills_a_hang_and_contains_memory():
    started = time.perf_counter()
    with pytest.raises(IsolatedFailure, match="longer than 1 s and was killed"):
        run_isolated(lambda: time.sleep(60), ProcessLimits(timeout_s=1.0))
    assert time.perf_counter() - started < 5.0
    with pytest.raises(MemoryError):
        run_isolated(lambda: bytearray(8 << 30), ProcessLimits(extra_address_space=256 << 20))
    with pytest.raises(IsolatedFailure, match="died without an answer"):
        run_isolated(lambda: os._exit(3))
    assert run_isolated(lambda: sum(range(10))) == 45
    with pytest.raises(OSError):  # no new file descriptors in the child
        run_isolated(lambda: open(os.devnull).close())


_CHILD = """
import json, resource, sys, textwrap, time
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
from llmexplore.methods.maestro.checking import check_code
from llmexplore.methods.maestro.sandbox import CodeRejected
from llmexplore.methods.maestro.skills import INITIATION, POLICY
out = []
for name, source, spec in json.loads(sys.argv[1]):
    started = time.perf_counter()
    try:
        check_code(source, (INITIATION if spec == "initiation" else POLICY,))
        out.append((name, "accepted", time.perf_counter() - started))
    except CodeRejected as exc:
        out.append((name, exc.reason[:200], time.perf_counter() - started))
print(json.dumps(out))
"""


def test_the_battery_holds_under_a_6gb_address_space_limit():
    cases = [(n, _module(b), "initiation") for n, b, _ in HEAVY]
    cases.append(("policy-memory", POLICY_MEMORY, "policy"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == len(cases)
    for name, reason, seconds in results:
        assert reason != "accepted", name
        assert seconds < 5.0, (name, seconds)


def test_many_heavy_but_allowed_steps_stop_on_time():
    """Each comparison of a 90k-item list is allowed, but many of them must stop at the time limit."""
    body = "x = [0] * 90000\ny = [0] * 90000\nn = 0\nwhile n < 10000:\n    n = n + (x == y)\nreturn n > 0"
    code = SandboxedCode(_module(body), (INITIATION,))
    started = time.perf_counter()
    with pytest.raises(CodeFailed, match="more than 50 ms"):
        code.call("initiation", example_obs())
    assert time.perf_counter() - started < 1.0
