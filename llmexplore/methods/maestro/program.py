"""The generated code of one run, loaded and ready to run in a rollout worker.

``SkillProgram`` reads a code folder (see ``codegen.py``), checks every file again (the
folder may have been edited by hand since it was generated) and answers the three questions
of call-and-return execution: which skills can start (initiation), does the active skill
stop (termination), and which skill comes next (the policy over skills).

A call that fails at run time (a budget, an error, a wrong return value) must not stop
training: it is counted, the first failure of each function is logged with its reason, and
a safe default is used (the skill cannot start; the skill stops; the first available skill).
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from llmexplore.errors import ConfigError, shown
from llmexplore.methods.maestro.checking import check_result
from llmexplore.methods.maestro.codegen import TRAINING, CodeTarget
from llmexplore.methods.maestro.sandbox import (DEFAULT_LIMITS, CodeFailed, CodeRejected, FunctionSpec,
                                                Limits, SandboxedCode)
from llmexplore.methods.maestro.skills import FUNCTIONS, check_skills

log = logging.getLogger(__name__)
TASK_PREFIX = "task:"


def policy_path(policy: str) -> str:
    """The code-folder path of a policy over skills: ``training`` or ``task:<name>``."""
    if policy == TRAINING:
        return "policies/training.py"
    if policy.startswith(TASK_PREFIX) and policy[len(TASK_PREFIX):]:
        return CodeTarget("task", policy[len(TASK_PREFIX):], "select_skill", "").path
    raise ConfigError(f"unknown policy over skills {shown(policy)}", hint="use 'training' or 'task:<task name>'")


def load_code(root: Path, rel: str, spec: FunctionSpec, limits: Limits) -> SandboxedCode:
    """The function in ``root/rel``, validated against ``spec`` and compiled,
    not yet run; ConfigError when the file is missing or refused."""
    path = root / rel
    if not path.is_file():
        raise ConfigError(f"generated code {path} is missing",
                          hint=f"generate it with `llmexplore maestro generate --out {root}` "
                               "(docs/maestro.md)")
    try:
        return SandboxedCode(path.read_text(encoding="utf-8"), (spec,), limits, name=str(path))
    except CodeRejected as exc:
        raise ConfigError(f"generated code {path} does not pass validation: {exc.reason}",
                          hint="fix or delete the file and run `llmexplore maestro generate` again") from None


class SkillProgram:
    def __init__(self, root: str | Path, skills: tuple[str, ...], policy: str = TRAINING,
                 limits: Limits = DEFAULT_LIMITS):
        self.root = Path(root).expanduser()
        if not self.root.is_dir():
            raise ConfigError(f"code folder {self.root} does not exist",
                              hint="generate it with `llmexplore maestro generate --out DIR` "
                                   "(docs/maestro.md)")
        self.skills = check_skills(skills)
        self.limits = limits
        self.policy_name = policy
        self.files: dict[str, str] = {}
        self.initiation: dict[str, SandboxedCode] = {}
        self.termination: dict[str, SandboxedCode] = {}
        for skill in self.skills:
            for fn, table in (("initiation", self.initiation), ("termination", self.termination)):
                rel = CodeTarget("skill", skill, fn, "").path
                table[skill] = load_code(self.root, rel, FUNCTIONS[fn], limits)
                self.files[rel] = table[skill].validated.source
        rel = policy_path(policy)
        self.policy = load_code(self.root, rel, FUNCTIONS["select_skill"], limits)
        self.files[rel] = self.policy.validated.source
        self.errors: Counter[str] = Counter()
        self._logged: set[str] = set()

    def digest(self) -> str:
        """Identifies the code this program runs (skills and policy), for resume checks."""
        h = hashlib.sha256()
        for rel in sorted(self.files):
            h.update(rel.encode() + b"\0" + self.files[rel].encode() + b"\0")
        return h.hexdigest()[:16]

    # -- the three questions --------------------------------------------------------------------
    def available(self, obs: dict[str, Any]) -> tuple[str, ...]:
        """Skills whose initiation holds on ``obs``, in skill order; a failing initiation counts as False."""
        spec = FUNCTIONS["initiation"]
        return tuple(s for s in self.skills
                     if self._run(self.initiation[s], spec, obs, False, f"{s}.initiation"))

    def terminates(self, skill: str, obs: dict[str, Any]) -> bool:
        """Whether ``skill``'s termination fires on ``obs``; a failing call counts as True (the skill stops)."""
        return self._run(self.termination[skill], FUNCTIONS["termination"], obs, True, f"{skill}.termination")

    def select(self, obs: dict[str, Any], memory: dict[str, Any]) -> str:
        """The next skill, one of ``obs["available"]`` (must not be empty): the policy's choice,
        or the first available skill when the call fails. ``memory`` is the policy's state."""
        fallback = obs["available"][0]
        return self._run(self.policy, FUNCTIONS["select_skill"], obs, fallback, "policy", memory)

    def _run(self, code: SandboxedCode, spec: FunctionSpec, obs: dict[str, Any], default: Any, where: str,
             *extra: Any) -> Any:
        """The checked answer; the code saw copies (its memory comes back checked), so ``obs`` here
        is what the host built, and the answer is checked against that."""
        try:
            return check_result(spec, code.call(spec.name, obs, *extra), obs)
        except (CodeFailed, CodeRejected) as exc:
            self._fail(where, getattr(exc, "reason", str(exc)), default)
            return default

    def _fail(self, where: str, reason: str, default: Any) -> None:
        self.errors[where] += 1
        if where not in self._logged:
            self._logged.add(where)
            log.warning("maestro: generated %s failed (%s); using %r instead. Further failures are only "
                        "counted (episode stat maestro_code_errors).", where, reason, default)
