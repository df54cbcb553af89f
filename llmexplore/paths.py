"""Names that become parts of paths (annotators, label files, grid labels, prompt versions): checked
here, once, so that no name given by a user or a file climbs out of the folder it is meant for."""

from __future__ import annotations

import os
import re
from pathlib import Path

from llmexplore.errors import ConfigError, shown

#: longest name accepted as one path component (file systems allow 255 bytes; suffixes are added)
MAX_NAME = 200
_SEPARATORS = re.compile(r"[/\\\x00-\x1f]")


def check_name(name: str, what: str) -> str:
    """``name`` when it is one plain path component: not empty, no separators or control characters, not
    starting with a dot (which covers '.' and '..'), at most ``MAX_NAME`` characters; else a ConfigError
    naming ``what`` (e.g. '--annotator') and the fix."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what} must be a non-empty name")
    if _SEPARATORS.search(name) or name.startswith(".") or len(name) > MAX_NAME:
        raise ConfigError(f"{what} {shown(name)} cannot be used as a file name: it must be one name, without "
                          f"'/' or '\\', not starting with '.', at most {MAX_NAME} characters",
                          hint="use letters, digits, '-', '_' and '.' (not first), e.g. run-2")
    return name


def inside(folder: str | os.PathLike, *names: str, what: str) -> Path:
    """``folder/names...`` after checking each name (``check_name``) and that the joined path, with symbolic
    links followed, stays inside ``folder``."""
    base = Path(folder)
    path = base.joinpath(*(check_name(n, what) for n in names))
    if not path.resolve().is_relative_to(base.resolve()):
        raise ConfigError(f"{what}: {path} leads outside {base} (through a symbolic link)",
                          hint=f"keep {what} inside {base}")
    return path


def check_relative(text: str, what: str) -> str:
    """``text`` when it is a relative path that never climbs ('..') or starts at the root: the paths a file
    stores for things beside it (a run record's log and checkpoint files)."""
    parts = Path(text).parts
    if not text or Path(text).is_absolute() or ".." in parts or "\x00" in text:
        raise ConfigError(f"{what} {shown(text)} must be a path inside its folder (relative, without '..')")
    return text
