"""The sandbox refuses hostile code with a reason, and nothing hostile ever runs.

Each snippet below is the body of an initiation function that would, run as plain Python,
write a marker file, escape to the interpreter, loop forever or allocate without bound.
``check_code`` (static validation, then probe runs under a budget) must refuse every one with
a reason, and the marker file must not appear. A control test runs the file-writing snippets
with plain ``exec`` to show that they are live (the battery can fail).
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from llmexplore.methods.maestro.checking import check_code
from llmexplore.methods.maestro.interface import example_obs
from llmexplore.methods.maestro.sandbox import CodeFailed, CodeRejected, Limits, SandboxedCode, validate
from llmexplore.methods.maestro.skills import INITIATION, POLICY, TERMINATION

M = "{marker}"  # replaced by the test's marker path

#: (id, body of `def initiation(obs):`, words the refusal must contain)
HOSTILE = [
    ("import", f"import os\nos.system('touch {M}')\nreturn True", "imports are not allowed"),
    ("from-import", f"from os import system\nsystem('touch {M}')\nreturn True", "imports are not allowed"),
    ("dunder-import", f"__import__('os').system('touch {M}')\nreturn True", "'__import__'"),
    ("subclasses-walk", "return ().__class__.__bases__[0].__subclasses__()", "'.__class__'"),
    ("mro-walk", "return obs.__class__.__mro__", "'.__class__'"),
    ("dict-attr", "return obs.__dict__", "'.__dict__'"),
    ("open", f"open('{M}', 'w').write('x')\nreturn True", "name 'open' is not defined"),
    ("exec", f"exec(\"open('{M}', 'w')\")\nreturn True", "name 'exec' is not defined"),
    ("eval", f"return eval(\"open('{M}', 'w')\")", "name 'eval' is not defined"),
    ("compile", "return compile('1', 'f', 'eval')", "name 'compile' is not defined"),
    ("getattr", "return getattr(obs, '__class__')", "name 'getattr' is not defined"),
    ("getattr-builtins", "f = getattr\nreturn f(obs, 'get')", "name 'getattr' is not defined"),
    ("setattr", "setattr(obs, 'x', 1)\nreturn True", "name 'setattr' is not defined"),
    ("globals", "return globals()['__builtins__']", "name 'globals' is not defined"),
    ("locals", "return locals()", "name 'locals' is not defined"),
    ("vars", "return vars()", "name 'vars' is not defined"),
    ("type", "return type(obs)", "name 'type' is not defined"),
    ("print", "print('hello')\nreturn True", "name 'print' is not defined"),
    ("input", "return input()", "name 'input' is not defined"),
    ("breakpoint", "breakpoint()\nreturn True", "name 'breakpoint' is not defined"),
    ("bytearray", "return bytearray(10**10)", "name 'bytearray' is not defined"),
    ("underscore-name", "_x = 1\nreturn True", "names starting with '_' are reserved"),
    ("builtins-key", "return obs.get('__builtins__')", "obs has no field '__builtins__'"),
    ("format-attack", "return '{0.__class__}'.format(obs)", "'.format' is not allowed"),
    ("format-map", "return '{x}'.format_map(obs)", "'.format_map' is not allowed"),
    ("fstring", "return f'{obs}' == ''", "f-strings are not allowed"),
    ("percent-format", "return ('%s' % obs) == ''", "string formatting with % is not allowed"),
    ("percent-width", "return ('%999999999d' % 1) == ''", "string formatting with % is not allowed"),
    ("join-blowup", "return ','.join(['a'] * 10)", "'.join' is not allowed"),
    ("encode", "return obs['message'].encode()", "'.encode' is not allowed"),
    ("dict-clear", "obs.clear()\nreturn True", "'.clear' is not allowed"),
    ("fromkeys", "return dict.fromkeys(range(3))", "'.fromkeys' is not allowed"),
    ("dunder-method", "return obs['inventory'].__len__()", "'.__len__'"),
    ("while-true", "while True:\n    pass", "never ends"),
    ("while-one", "x = 0\nwhile 1:\n    x = x + 1", "never ends"),
    ("endless-counter", "n = 0\nwhile n >= 0:\n    n = n + 1\nreturn True", "budget"),
    ("endless-for", "n = [0]\nfor x in n:\n    n.append(x)\nreturn True", "budget"),
    ("huge-range", "for i in range(10**9):\n    pass\nreturn True", "items"),
    ("list-times-huge", "return len([0] * 10**10) > 0", "10000000000 items"),
    ("str-times-huge", "return len('a' * 10**12) > 0", "items"),
    ("doubling", "x = 'a'\nfor i in range(64):\n    x = x + x\nreturn True", "items"),
    ("aug-doubling", "x = ['a']\nfor i in range(64):\n    x *= 2\nreturn True", "items"),
    ("pow-tower", "return 2 ** 10 ** 10 > 0", "bits"),
    ("shift-huge", "return (1 << 10**9) > 0", "bits"),
    ("big-int-str", "return len(str(10 ** 5000)) > 0", "bits"),
    ("sum-lists", "return len(sum([[1] * 10] * 10, [])) > 0", "sum() only adds numbers"),
    ("sum-lists-heavy", "return len(sum([[1] * 1000] * 1000, [])) > 0",
     "sum() of a value of more than 100000 items"),
    ("sorted-huge", "return sorted(range(10**6))[0] == 0", "items"),
    (
        "nested-comprehension",
        "return [x for a in range(3000) for b in range(3000) for x in ()] == []",
        "budget",
    ),
    ("recursion", "return initiation(obs)", "recursion is not allowed"),
    ("lambda", "f = lambda: 0\nreturn True", "lambda is not allowed"),
    ("lambda-call", "return (lambda: True)()", "lambda is not allowed"),
    ("nested-def", "def inner():\n    return True\nreturn inner()", "nested function"),
    ("yield", "yield True", "generators"),
    ("generator-frame", "g = (x for x in range(3))\nreturn g.gi_frame is None", "'.gi_frame' is not allowed"),
    ("class", "class A:\n    pass\nreturn True", "class definitions are not allowed"),
    ("try-swallow", "try:\n    return True\nexcept BaseException:\n    return False", "try/except"),
    ("global", "global X\nreturn True", "global is not allowed"),
    ("with-open", f"with open('{M}', 'w') as f:\n    pass\nreturn True", "with is not allowed"),
    ("del", "del obs\nreturn True", "del is not allowed"),
    ("assert", "assert False\nreturn True", "assert is not allowed"),
    ("raise", "raise SystemExit\nreturn True", "raise is not allowed"),
    ("star", "return [*range(3)] == []", "star-unpacking"),
    ("walrus", "return (y := 1) > 0", ":="),
    ("call-subscript", "return obs['message'][0]()", "only named functions"),
    ("annotation", f"x: open('{M}', 'w') = 1\nreturn True", "name 'open' is not defined"),
]

#: whole-module attacks (the function itself is harmless)
HOSTILE_MODULES = [
    ("decorator", "@staticmethod\ndef initiation(obs):\n    return True", "decorators"),
    ("async", "async def initiation(obs):\n    return True", "async functions are not allowed"),
    ("top-level-call", f"open('{M}', 'w')\ndef initiation(obs):\n    return True", "top level"),
    ("top-level-mutable", "CACHE = []\ndef initiation(obs):\n    return True", "must be a constant"),
    ("param-annotation", f"def initiation(obs: open('{M}', 'w')) -> bool:\n    return True", "name 'open'"),
    (
        "default-arg",
        f"def initiation(obs, f=open('{M}', 'w')):\n    return True",
        "plain positional parameters",
    ),
    (
        "mutual-recursion",
        "def initiation(obs):\n    return helper(obs)\ndef helper(o):\n    return initiation(o)",
        "recursion is not allowed (initiation -> helper -> initiation)",
    ),
    ("shadow-builtin", "def len(x):\n    return 0\ndef initiation(obs):\n    return True", "builtin"),
    ("deep-nesting", "def initiation(obs):\n    return " + "(" * 400 + "1" + ")" * 400, "syntax error"),
    ("too-long", "def initiation(obs):\n    return True\n" + "# padding\n" * 3000, "characters long"),
    ("missing-function", "def init(obs):\n    return True", "function 'initiation' is missing"),
    ("wrong-arity", "def initiation(obs, memory):\n    return True", "must take 1 parameter"),
]


def _module(body: str) -> str:
    return "def initiation(obs):\n" + textwrap.indent(body, "    ") + "\n"


def _cases():
    for name, body, reason in HOSTILE:
        yield pytest.param(_module(body), reason, id=name)
    for name, source, reason in HOSTILE_MODULES:
        yield pytest.param(source + "\n", reason, id=name)


def test_the_battery_is_large():
    assert len(HOSTILE) + len(HOSTILE_MODULES) >= 50


@pytest.mark.parametrize("source,reason", list(_cases()))
def test_hostile_code_is_refused_with_a_reason_and_never_runs(tmp_path, source, reason):
    marker = tmp_path / "marker"
    source = source.replace(M, str(marker))
    started = time.process_time()
    with pytest.raises(CodeRejected) as info:
        check_code(source, (INITIATION,))
    assert reason in info.value.reason, info.value.reason
    assert time.process_time() - started < 5.0
    assert not marker.exists()


@pytest.mark.parametrize("name", ["open", "exec", "with-open", "import"])
def test_control_the_file_writing_snippets_are_live_in_plain_python(tmp_path, name):
    """Without the sandbox these snippets do write the marker: the battery tests something real."""
    body = next(b for n, b, _ in HOSTILE if n == name)
    marker = tmp_path / "marker"
    namespace: dict = {}
    exec(_module(body.replace(M, str(marker))), namespace)
    namespace["initiation"](example_obs())
    assert marker.exists()


def test_failures_at_run_time_name_the_function_and_the_reason():
    endless = _module("n = 0\nwhile n >= 0:\n    n = n + 1\nreturn True")
    code = SandboxedCode(endless, (INITIATION,), Limits(time_limit_s=60.0))  # the step limit alone
    started = time.process_time()
    with pytest.raises(CodeFailed) as info:
        code.call("initiation", example_obs())
    assert info.value.function == "initiation" and "more than 20000 steps" in info.value.reason
    assert time.process_time() - started < 5.0
    # the wall-time limit stops a call whose steps are each slow, before the step or allocation limits
    limits = Limits(time_limit_s=0.01, max_ticks=10**9, max_alloc=10**12)
    sorting = _module("n = 0\nwhile n >= 0:\n    n = n + len(sorted(range(50000)))\nreturn True")
    slow = SandboxedCode(sorting, (INITIATION,), limits)
    started = time.process_time()
    with pytest.raises(CodeFailed) as info:
        slow.call("initiation", example_obs())
    assert "used its budget: more than 10 ms" in info.value.reason
    assert time.process_time() - started < 5.0
    # and the allocation limit one that builds too much in total
    hungry = SandboxedCode(sorting, (INITIATION,), Limits(time_limit_s=60.0, max_ticks=10**9))
    with pytest.raises(CodeFailed, match="more than 1000000 items allocated in one call"):
        hungry.call("initiation", example_obs())


def test_subtle_errors_of_plausible_code_are_named():
    outside = _module("return obs['dlvl'] > 1")
    with pytest.raises(CodeRejected, match=r"obs has no field 'dlvl'; its fields are .*depth"):
        check_code(outside, (INITIATION,))
    nested = _module("return obs['features']['upstairs'] > 0")
    with pytest.raises(CodeRejected, match=r"obs\['features'\] has no field 'upstairs'; .*stairs_up"):
        check_code(nested, (INITIATION,))
    numpy = _module("return np.any(obs['features'])")
    with pytest.raises(CodeRejected, match="name 'np' is not defined"):
        check_code(numpy, (INITIATION,))
    wrong_return = _module("return 'yes'")
    with pytest.raises(CodeRejected, match="returned 'yes'; it must return True or False"):
        check_code(wrong_return, (INITIATION,))
    crashes_on_a_probe = _module("return obs['inventory'][0].startswith('a')")  # a probe carries nothing
    with pytest.raises(CodeRejected, match="failed on a probe state.*IndexError"):
        check_code(crashes_on_a_probe, (INITIATION,))
    bad_choice = "def select_skill(obs, memory):\n    return 'wizard'\n"
    with pytest.raises(CodeRejected, match="returned 'wizard', which is not one of obs\\['available'\\]"):
        check_code(bad_choice, (POLICY,))


def test_ordinary_python_is_accepted():
    source = '''
"""A termination an LM might write."""
LIMIT = 400

def helper(values):
    return sum(v for v in values if v > 0)

def termination(obs: dict) -> bool:
    seen = {}
    for name, count in obs["nearby"].items():
        seen[name] = count
    total = helper(list(seen.values()))
    words = obs["message"].lower().split()
    if "altar" in words or obs.get("num_items", 0) == 0:
        return True
    turns = obs["skill_turns"]
    turns += 1
    return turns >= LIMIT or total > 10 or obs["depth"] != obs["skill_start"]["depth"]
'''
    code = check_code(source, (TERMINATION,))
    assert code.call("termination", example_obs()) is False
    assert code.call("termination", example_obs(skill_turns=500)) is True
    assert code.call("termination", example_obs(message="There is an altar here.")) is True


REFERENCE = Path(__file__).resolve().parents[2] / "llmexplore/methods/maestro/maestro_reference"


@pytest.mark.parametrize("path", sorted(REFERENCE.rglob("*.py")), ids=lambda p: str(p.relative_to(REFERENCE)))
def test_reference_code_passes(path):
    specs = (INITIATION, TERMINATION) if path.parent.name == "skills" else (POLICY,)
    check_code(path.read_text(), specs)


def test_validation_does_not_run_anything(tmp_path):
    marker = tmp_path / "marker"
    validate(f"def initiation(obs):\n    return True\nX = 1\n", (INITIATION,))
    with pytest.raises(CodeRejected):
        validate(f"def initiation(obs):\n    return open('{marker}', 'w')\n", (INITIATION,))
    assert not marker.exists()
