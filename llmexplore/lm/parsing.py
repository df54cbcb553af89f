"""Reading declared answers out of free-form model replies, strictly.

A reply counts only when it declares its answer in the form the prompt asked for. We
accept the usual decoration models add (markdown emphasis, quotes, brackets, a final
period, a bullet) but never guess: a reply with no valid declared answer, or with
declared answers that disagree, is a failure with a reason, and the caller asks once
more before giving up with "unknown". Lines that repeat the prompt word for word (an
echoed template) are ignored. An answer the reply takes back afterwards ("Preferred: 1
... wait, message 2 is better") is no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

_DECORATION = " \t*_`'\"()[]{}<>.,;!"
#: words with which a reply takes back what it just declared
_RETRACTION = re.compile(r"\b(?:wait|actually|on second thought|correction|scratch that|i mean|i was wrong|"
                         r"changed? my mind|let me reconsider|oops)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    """``ok`` with ``value``, or a failure with a ``reason`` (for counts and logs)."""

    value: Any = None
    ok: bool = False
    reason: str = ""


def fail(reason: str) -> Parsed:
    """A failed parse, with why."""
    return Parsed(None, False, reason)


def _echoed(line: str, prompt: str | None) -> bool:
    """Whether ``line`` is a whole line of the prompt (tested without copying the prompt)."""
    if not prompt or line not in prompt:
        return False
    return (prompt == line or prompt.startswith(line + "\n") or prompt.endswith("\n" + line)
            or f"\n{line}\n" in prompt)


class DeclaredAnswer:
    """A final-line answer ``<Key>: <value>`` with a closed set of values."""

    def __init__(self, key: str, values: Mapping[str, Any], shown: str):
        self.key = key
        self.values = {k.lower(): v for k, v in values.items()}
        #: how the prompt asks for it, repeated in the retry reminder
        self.shown = shown
        self._line = re.compile(rf"^[^\w\n]*{re.escape(key)}[^\w\n]*[:=][ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
        self._key_lower = key.lower()
        #: one result object per value: answers are parsed by the hundred thousand
        self._ok = {k: Parsed(v, True) for k, v in self.values.items()}

    def clean(self, raw: str) -> str:
        """An answer as compared: without decoration, lower case, single spaces."""
        value = raw.strip().strip(_DECORATION).strip().lower()
        return " ".join(value.split())

    def parse(self, text: str | None, prompt: str | None = None) -> Parsed:
        """The answer on the reply's answer lines; a failure saying why when there is none, or answers
        conflict, or none is a valid value, or the reply retracts it."""
        if text is None or not text.strip():
            return fail("empty")
        low = text.lower()
        at = low.find(self._key_lower)
        if at < 0:
            return fail("no answer line")
        # answer lines start at or after the line of the key's first mention: scan from there
        # (unless lower-casing changed the length, which shifts positions)
        start = text.rfind("\n", 0, at) + 1 if len(low) == len(text) else 0
        found: Parsed | None = None
        invalid = 0
        end = 0
        for m in self._line.finditer(text, start):
            if prompt and _echoed(m.group(0).strip(), prompt):
                continue
            ok = self._ok.get(self.clean(m.group(1)))
            if ok is None:
                invalid += 1
                continue
            if found is None:
                found = ok
            elif ok.value != found.value:
                return fail("conflicting answers")
            end = m.end()
        if found is None:
            return fail("invalid value" if invalid else "no answer line")
        if _RETRACTION.search(text, end):
            return fail("answer retracted")
        return found


_BULLET = re.compile(r"^[ \t]*(?:[-*•–]|\d{1,2}[.)])[ \t]+(.+?)[ \t]*$", re.MULTILINE)
_NONE_WORDS = {"none", "nothing", "no goals", "no goal", "n/a"}
#: where a goal's stated reason starts ("chop tree: wood is needed", "chop tree - because ...")
_REASON = re.compile(r"[:(]| [-–—] |\b(?:because|since|so that|to get|in order)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:no|not|never|without|nothing|cannot|can't|don't|doesn't|isn't|won't)\b|n't\b",
                       re.IGNORECASE)


def parse_bullets(text: str | None, prompt: str | None = None, *, max_words: int = 6) -> Parsed:
    """Goal suggestions as bullet lines. ``- none`` (alone) is a valid empty answer.

    A goal's stated reason is cut off ("chop tree: it gives wood" is "chop tree"). A
    negated line ("the player has no wood", "do not attack") is a statement, not a goal,
    and is skipped, as is a bullet longer than ``max_words`` (prose); a reply whose only
    bullets are skipped fails.
    """
    if text is None or not text.strip():
        return fail("empty")
    goals: list[str] = []
    said_none = False
    for m in _BULLET.finditer(text):
        if _echoed(m.group(0).strip(), prompt):
            continue
        line = m.group(1).strip(_DECORATION).lower()
        if line.strip() in _NONE_WORDS:
            said_none = True
            continue
        reason = _REASON.search(line)
        goal = " ".join((line[:reason.start()] if reason else line).strip(_DECORATION).split())
        if _NEGATION.search(goal):
            continue
        if goal and len(goal.split()) <= max_words and goal not in goals:
            goals.append(goal)
    if goals:
        return Parsed(goals, True)
    if said_none:
        return Parsed([], True)
    return fail("no bullet lines")


_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_code_block(text: str | None, prompt: str | None = None) -> Parsed:
    """Exactly one fenced code block; several disagreeing blocks are ambiguous."""
    if text is None or not text.strip():
        return fail("empty")
    blocks = [b.strip("\n") for b in _FENCE.findall(text)]
    blocks = [b for b in blocks if b.strip()]
    if not blocks:
        return fail("no code block")
    if len(set(blocks)) > 1:
        return fail("several code blocks")
    return Parsed(blocks[0], True)
