"""Asking an LM for MaestroMotif's code, checking it, and keeping what passes.

For each target (a skill's initiation and termination, the training-time policy over
skills, a task's policy over skills) one ``maestro_code`` question goes to the LM through
``llmexplore.lm`` (oracle, OpenAI-compatible server or vLLM; answers cached). The reply's
code goes through ``check_code``. A refusal is saved under ``rejected/`` with its reason,
and the LM is asked once more with the reason in the prompt; a second refusal stops with a
``CodeGenerationError`` that names the reason and the saved file.

The code folder (what the ``maestro`` method reads):

    skills/<skill>/initiation.py, skills/<skill>/termination.py
    policies/training.py, policies/tasks/<task>.py
    rejected/<same path>.attempt<k>.py   refused replies, each starting with the reason
    manifest.json                        per file: target, model, attempts, sha256

Every file is written atomically and the manifest after each file, so a rerun resumes:
files present in the manifest with a matching digest are kept.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from llmexplore.atomic import atomic_write_json, atomic_write_text
from llmexplore.errors import ConfigError, UserError
from llmexplore.lm.base import LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.questions import ask
from llmexplore.methods.maestro.questions import CodeRequest, MaestroCode
from llmexplore.methods.maestro.checking import check_code
from llmexplore.methods.maestro.sandbox import DEFAULT_LIMITS, CodeRejected, FunctionSpec, Limits
from llmexplore.methods.maestro.skills import CONTRACTS, FUNCTIONS, SKILL_DESCRIPTIONS, SKILLS, check_skills

MANIFEST = "manifest.json"
TRAINING = "training"
#: code requests are answered greedily: the same prompt should give the same program
CODE_SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=2048)


class CodeGenerationError(UserError):
    """The LM's code was refused twice."""


@dataclass(frozen=True)
class CodeTarget:
    """One file of the code folder: which function for which skill or task."""

    kind: str  # "skill", "training policy" or "task"
    target: str
    function: str
    description: str

    @property
    def spec(self) -> FunctionSpec:
        """The sandbox signature the target's function must have (``FUNCTIONS[function]``)."""
        return FUNCTIONS[self.function]

    @property
    def path(self) -> str:
        """The file's path in the code folder: ``skills/<skill>/<function>.py``,
        ``policies/training.py`` or ``policies/tasks/<task>.py``."""
        if self.kind == "skill":
            return f"skills/{self.target}/{self.function}.py"
        if self.kind == "training policy":
            return "policies/training.py"
        return f"policies/tasks/{self.target}.py"

    def request(self, feedback: str = "none") -> CodeRequest:
        """The ``maestro_code`` item for this target; ``feedback`` is
        "none" on a first try, else why the previous reply was refused."""
        spec = self.spec
        return CodeRequest(kind=self.kind, target=self.target, description=self.description,
                           signature=f"{spec.name}({', '.join(spec.params)})",
                           contract=CONTRACTS[self.function], feedback=feedback)


def skill_targets(skills: Sequence[str] = SKILLS) -> list[CodeTarget]:
    """An initiation and a termination target per skill, in canonical skill
    order; ConfigError for an unknown, repeated or empty skill list."""
    return [CodeTarget("skill", s, fn, f"a skill that {SKILL_DESCRIPTIONS[s]}")
            for s in check_skills(skills) for fn in ("initiation", "termination")]


def training_target(skills: Sequence[str] = SKILLS) -> CodeTarget:
    """The training-time policy over ``skills``, described with the practice plan the LM should follow."""
    names = ", ".join(check_skills(skills))
    return CodeTarget("training policy", TRAINING, "select_skill",
                      f"the policy over skills used while the skills ({names}) are trained; it should give "
                      "every skill plenty of practice in the states where it makes sense, e.g. explore a "
                      "level, then go down to a varying depth and back up, and trade or use an altar "
                      "whenever possible; in half of the episodes (drawn at the start) head for the Gnomish "
                      "Mines first, whose staircase leaves the main dungeon at depth 2 to 4")


def task_target(name: str, goal: str) -> CodeTarget:
    """A zero-shot task's policy over skills, described by the task's goal text (whitespace collapsed)."""
    return CodeTarget("task", name, "select_skill", " ".join(goal.split()))


def file_digest(text: str) -> str:
    """sha256 hex digest of the text's UTF-8 bytes, as the manifest records each file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_manifest(root: Path) -> dict[str, Any]:
    """The code folder's manifest, always with a ``files`` table (empty when
    there is no manifest yet); ConfigError when it is not valid JSON."""
    path = root / MANIFEST
    if not path.is_file():
        return {"files": {}}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}",
                          hint="delete it to generate the code again") from None
    data.setdefault("files", {})
    return data


def is_current(root: Path, target: CodeTarget, manifest: dict[str, Any]) -> bool:
    """Whether the target's file exists and still has the digest the
    manifest recorded, so a rerun keeps it instead of asking again."""
    entry = manifest["files"].get(target.path)
    path = root / target.path
    if not entry or not path.is_file():
        return False
    return entry.get("sha256") == file_digest(path.read_text(encoding="utf-8"))


Progress = Callable[[CodeTarget, str], None]


def generate_code(root: str | Path, lm: LanguageModel, targets: Iterable[CodeTarget], *,
                  params: SamplingParams = CODE_SAMPLING, prompts: str | None = None,
                  limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None) -> dict[str, Any]:
    """Generate, check and save each target's code (kept when already there); returns the manifest."""
    root = Path(root)
    manifest = read_manifest(root)
    question = MaestroCode(prompts=prompts)
    for target in targets:
        if is_current(root, target, manifest):
            if progress:
                progress(target, "kept")
            continue
        entry = _generate_one(root, lm, question, target, params, limits)
        atomic_write_text(root / target.path, entry.pop("code"))
        manifest["files"][target.path] = entry
        atomic_write_json(root / MANIFEST, manifest)
        if progress:
            progress(target, f"accepted after {entry['attempts']} attempt(s)")
    return manifest


def _generate_one(root: Path, lm: LanguageModel, question: MaestroCode, target: CodeTarget,
                  params: SamplingParams, limits: Limits) -> dict[str, Any]:
    feedback = "none"
    rejected: list[dict[str, str]] = []
    for attempt in (1, 2):
        result = ask(lm, question, [target.request(feedback)], params)
        code = result.labels[0]
        try:
            if code is None:
                reasons = ", ".join(result.failure_reasons) or "no answer"
                raise CodeRejected(f"the reply held no single python code block ({reasons})")
            code = code if code.endswith("\n") else code + "\n"
            check_code(code, (target.spec,), limits, name=target.path)
        except CodeRejected as exc:
            saved = _save_rejected(root, target, attempt, code, exc.reason)
            rejected.append({"reason": exc.reason, "file": str(saved.relative_to(root))})
            if attempt == 2:
                raise CodeGenerationError(
                    f"the LM's code for {target.kind} '{target.target}' ({target.function}) was refused "
                    f"twice; last reason: {exc.reason}",
                    hint=f"the refused code is in {saved} (first attempt: {root / rejected[0]['file']}); "
                         f"fix the prompt or the model, or write {root / target.path} by hand and rerun",
                ) from None
            feedback = (f"it was refused by the validator: {exc.reason}. Write the function again and fix "
                        "this problem.")
            continue
        return {"kind": target.kind, "target": target.target, "function": target.function,
                "model": lm.model_id, "attempts": attempt, "rejected": rejected, "sha256": file_digest(code),
                "code": code}
    raise AssertionError("unreachable")  # pragma: no cover


def _save_rejected(root: Path, target: CodeTarget, attempt: int, code: str | None, reason: str) -> Path:
    path = root / "rejected" / target.path.replace(".py", f".attempt{attempt}.py")
    header = "".join(f"# {line}\n" for line in f"REFUSED: {reason}".splitlines())
    atomic_write_text(path, header + "\n" + (code if code is not None else "# (no code in the reply)\n"))
    return path
