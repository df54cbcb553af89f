"""The oracle's answers to MaestroMotif's code requests: hand-written reference functions.

A request names its target (a skill, ``training`` or a task) and the function it wants
(the signature ``initiation(obs)``, ``termination(obs)`` or ``select_skill(obs, memory)``).
The answer is that function cut from ``maestro_reference/`` (with the constants and helper
functions of its file), in a python code block after one sentence, as an LM would write it.
Tasks the reference does not know get a generic policy picked by key words of their goal text.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from llmexplore.errors import ConfigError
from llmexplore.lm.errors import OracleError
from llmexplore.paths import check_name

REFERENCE_DIR = Path(__file__).resolve().parent / "maestro_reference"
_SIGNATURE = re.compile(r"^\s*(\w+)\s*\(")
#: key words of a task's goal text -> the fallback policy (first match wins)
FALLBACKS = (
    (re.compile(r"\b(?:shop|sell|buy|price|merchant|trade)", re.I), "trade"),
    (re.compile(r"\b(?:altar|bless|curse|buc)", re.I), "altar"),
    (re.compile(r"\b(?:down|descend|deeper|downstairs)\b", re.I), "descend"),
    (re.compile(r"\b(?:up|ascend|climb|exit|leave|upstairs)\b", re.I), "climb"),
)


def reference_file(kind: str, target: str, description: str = "") -> Path:
    """The reference file answering a request for ``target`` of ``kind`` (skill, training policy, task)."""
    if kind in ("skill", "task"):
        try:  # the target comes from the prompt: it must name a file in the reference folder
            check_name(target, f"the {kind} name")
        except ConfigError as exc:
            raise OracleError(exc.message) from None
    if kind == "skill":
        path = REFERENCE_DIR / "skills" / f"{target}.py"
    elif kind == "training policy":
        path = REFERENCE_DIR / "policies" / "training.py"
    elif kind == "task":
        path = REFERENCE_DIR / "policies" / "tasks" / f"{target}.py"
        if not path.is_file():
            match = (fallback for pattern, fallback in FALLBACKS if pattern.search(description))
            name = next(match, "explore")
            path = REFERENCE_DIR / "policies" / "fallback" / f"{name}.py"
    else:
        raise OracleError(f"the oracle cannot write code for a {kind!r}")
    if not path.is_file():
        raise OracleError(f"the oracle has no reference code for the {kind} {target!r} ({path} is missing)")
    return path


@lru_cache(maxsize=256)
def reference_function(path: str, function: str) -> str:
    """``function`` of the file at ``path`` with the file's docstring, constants and helpers."""
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if function not in names:
        raise OracleError(f"{path} has no function {function!r}")
    other_entry_points = {"initiation", "termination", "select_skill"} - {function}
    kept = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name in other_entry_points)]
    lines = source.splitlines()
    parts = ["\n".join(lines[n.lineno - 1:n.end_lineno]) for n in kept]
    return "\n\n".join(parts).strip() + "\n"


def code_answer(fields: dict[str, str]) -> str:
    """The reply to a code request: the reference function its signature names, for the skill, training policy
    or task it targets, in a python block after one sentence."""
    match = _SIGNATURE.match(fields.get("signature", ""))
    if match is None:
        raise OracleError(f"cannot read the requested function from the signature "
                          f"{fields.get('signature')!r}")
    function = match.group(1)
    path = reference_file(fields["kind"], fields["target"], fields.get("description", ""))
    code = reference_function(str(path), function)
    what = f"the {fields['kind']} {fields['target']}"
    return (f"Here is {function} for {what}, using only the documented fields of obs.\n\n"
            f"```python\n{code}```\n")
