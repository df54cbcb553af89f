"""Prompt templates as files users copy and edit, and that can be read back.

A template is text with ``{field}`` placeholders (``{{`` and ``}}`` for literal braces).
It renders fields into a prompt, and it can parse a rendered prompt back into its fields:
the oracle answers from prompt text alone (behind ``llmexplore lm serve`` only text crosses
the wire), so every template must be reversible. That asks two things of a template:
it ends with fixed text, and two fields never touch. Questions put captions on one line
(``flatten``) before rendering, which keeps parsing unambiguous.

Files live in a prompt folder laid out as ``<kind>/<version>.txt`` plus ``retry.txt``;
``configs/prompts`` holds ours. Point ``LMConfig.prompts``, ``--prompts`` or
``$LLMEXPLORE_PROMPTS`` at a copy to change wording.
"""

from __future__ import annotations

import os
import re
import string
from functools import lru_cache
from pathlib import Path

from llmexplore.lm.errors import TemplateError
from llmexplore.yaml_input import load_yaml

PROMPTS_ENV = "LLMEXPLORE_PROMPTS"
#: characters of a fixed piece searched for before the whole piece is compared
_PROBE = 16
RETRY = "retry"


class Template:
    def __init__(self, text: str, name: str = "<inline>"):
        self.name = name
        self.text = text
        pieces: list[tuple[str, str | None]] = []
        try:
            for literal, field, spec, conv in string.Formatter().parse(text):
                if spec or conv:
                    raise TemplateError(f"template {name}: field {{{field}}} may not carry a format spec")
                if field is not None and not field.isidentifier():
                    raise TemplateError(f"template {name}: field name {field!r} is not a plain name")
                pieces.append((literal, field))
        except ValueError as exc:
            raise TemplateError(f"template {name}: {exc} (write literal braces as {{{{ and }}}})") from None
        self.fields: tuple[str, ...] = tuple(dict.fromkeys(f for _, f in pieces if f is not None))
        if not self.fields:
            raise TemplateError(f"template {name} has no {{field}} placeholders")
        regex, seen = [], set()
        for i, (literal, field) in enumerate(pieces):
            if field is not None and not literal and i > 0 and pieces[i - 1][1] is not None:
                raise TemplateError(f"template {name}: fields {{{pieces[i - 1][1]}}} and {{{field}}} touch; "
                                    "put fixed text between them so the prompt can be read back")
            regex.append(re.escape(literal))
            if field is not None:
                regex.append(f"(?P={field})" if field in seen else f"(?P<{field}>.*?)")
                seen.add(field)
        if pieces[-1][1] is not None:
            raise TemplateError(f"template {name} must end with fixed text after {{{pieces[-1][1]}}}")
        self._regex = re.compile("".join(regex), re.DOTALL)
        #: the text before the first field, then (field, the fixed text after it) in order
        self._head = pieces[0][0]
        self._steps = tuple((field, pieces[i + 1][0], pieces[i + 1][0][:_PROBE])
                            for i, (_, field) in enumerate(pieces) if field is not None)
        self._pieces = tuple(pieces)
        literals = [lit for lit, _ in pieces if lit]
        #: the longest fixed piece: a quick test of whether a text can be this template at all
        self.signature = max(literals, key=len)

    def render(self, **fields: str) -> str:
        # joining the parsed pieces gives what ``str.format`` gives (no specs or conversions are
        # allowed) without re-reading the whole template for every prompt
        """The prompt with the fields filled in; an error naming a missing field."""
        parts: list[str] = []
        try:
            for literal, field in self._pieces:
                parts.append(literal)
                if field is not None:
                    value = fields[field]
                    parts.append(value if type(value) is str else format(value, ""))
        except KeyError:
            missing = [f for f in self.fields if f not in fields]
            raise TemplateError(f"template {self.name} needs field(s) {', '.join(missing)}") from None
        return "".join(parts)

    def parse(self, text: str) -> dict[str, str] | None:
        """The fields of a prompt rendered from this template (found anywhere in ``text``), else None."""
        # the signature test is cheap, but ``startswith`` (in ``_split``) turns other texts away cheaper
        # still when the template starts with fixed text; one that starts with a field has only the former
        if not self._head and self.signature not in text:
            return None
        fields = self._split(text)
        if fields is not None:
            return fields
        if self._head and self.signature not in text:
            return None
        m = self._regex.search(text)
        if m is None:
            return None
        fields = m.groupdict()
        if self.render(**fields) != m.group(0):  # a field swallowed fixed text: not ours
            return None
        return fields

    def _split(self, text: str) -> dict[str, str] | None:
        """The common case, a text that starts with this template, read with ``str.find``: it
        finds what the regex finds (each field ends at the next occurrence of the fixed text after
        it; an occurrence further on could not let the rest match where this one did not) in a
        fraction of the time, and annotation jobs read every prompt back. None: ask the regex."""
        head = self._head
        if not text.startswith(head):
            return None
        fields: dict[str, str] = {}
        pos = len(head)
        for field, literal, probe in self._steps:
            # find the literal by a short probe, then confirm: str.find prepares a long needle anew
            # on every call, which made it the slowest step here
            end = text.find(probe, pos)
            while end >= 0 and not text.startswith(literal, end):
                end = text.find(probe, end + 1)
            if end < 0 or field in fields:  # absent, or a repeated field (the regex's backreference)
                return None
            fields[field] = text[pos:end]
            pos = end + len(literal)
        return fields  # rendering them gives text[:pos] back by construction

    def __repr__(self) -> str:
        return f"Template({self.name!r}, fields={self.fields})"


def default_prompt_dir() -> Path:
    """The prompt folder: $LLMEXPLORE_PROMPTS, else the repository's configs/prompts."""
    env = os.environ.get(PROMPTS_ENV)
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[2] / "configs" / "prompts"


class PromptLibrary:
    """The templates of one prompt folder, loaded once and checked."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root).expanduser() if root else default_prompt_dir()
        if not self.root.is_dir():
            raise TemplateError(f"prompt folder {self.root} not found",
                                hint=f"copy configs/prompts from the llmexplore sources and set {PROMPTS_ENV} "
                                     "or the LM 'prompts' setting to it")
        self._templates: dict[tuple[str, str], Template] = {}
        self._tables: dict[tuple[str, str], dict[str, str]] = {}
        for path in sorted(self.root.glob("*/*.txt")):
            self._templates[(path.parent.name, path.stem)] = Template(_read(path), f"{path.parent.name}/{path.stem}")
        retry = self.root / f"{RETRY}.txt"
        if not retry.is_file():
            raise TemplateError(f"prompt folder {self.root} has no {RETRY}.txt (the format-reminder prompt)")
        self.retry = Template(_read(retry), RETRY)
        if set(self.retry.fields) != {"question", "answer_format"}:
            raise TemplateError(f"{retry}: needs exactly the fields {{question}} and {{answer_format}}")

    def kinds(self) -> list[str]:
        """Every kind of prompt the library holds."""
        return sorted({k for k, _ in self._templates})

    def versions(self, kind: str) -> list[str]:
        """The versions of one kind of prompt."""
        return sorted(v for k, v in self._templates if k == kind)

    def templates(self) -> list[Template]:
        """Every template of the library."""
        return list(self._templates.values())

    def template(self, kind: str, version: str = "default") -> Template:
        """One template; an error naming the versions there are."""
        try:
            return self._templates[(kind, version)]
        except KeyError:
            known = self.versions(kind)
            hint = (f"versions of {kind}: {', '.join(known)}" if known
                    else f"kinds in {self.root}: {', '.join(self.kinds()) or 'none'}")
            raise TemplateError(f"no prompt template {kind}/{version}.txt in {self.root}", hint=hint) from None

    def table(self, kind: str, name: str) -> dict[str, str]:
        """A YAML mapping beside a kind's templates (e.g. the Motif goal instructions); read once."""
        if (kind, name) in self._tables:
            return self._tables[(kind, name)]
        path = self.root / kind / f"{name}.yaml"
        data = load_yaml(path)  # a missing, non-UTF-8 or malformed file: a ConfigError naming it
        if not isinstance(data, dict) or not all(isinstance(v, (str, type(None))) for v in data.values()):
            raise TemplateError(f"{path} must map names to text")
        table = {str(k): (v or "").strip() for k, v in data.items()}
        self._tables[(kind, name)] = table
        return table


def _read(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text  # editors add a final newline; prompts do not need it


@lru_cache(maxsize=16)
def load_prompts(root: str | None = None) -> PromptLibrary:
    """Shared, cached library per folder (templates are immutable once loaded)."""
    return PromptLibrary(root)


def flatten(value: str) -> str:
    """A field value on one line, as templates require."""
    if "\n" in value or "\r" in value:
        return " ".join(value.split())
    return value

