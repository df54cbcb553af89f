"""Errors that reach the user as one clear message instead of a traceback."""

from __future__ import annotations

import reprlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


#: the most characters of a user's value an error message repeats: enough to recognise it, while a 100 KB
#: value pasted into a grid file or an option does not bury the message (and every other problem) under it
ECHO_LIMIT = 80
#: the same for a path an OS error names: a real one is worth reading whole (most are far shorter), while a
#: path too long to exist (ENAMETOOLONG) is cut
PATH_ECHO_LIMIT = 500


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` as an error message repeats it: whole when short, else its start and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def shown(value: object, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` as an error message repeats a user's value: whole when short, else its start and its
    length (a long string keeps its opening quote, so it still reads as a string)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value):,} characters)"
    brief = reprlib.Repr()  # a container's items, each cut short (keyword arguments only from Python 3.12)
    brief.maxlevel, brief.maxstring, brief.maxother = 3, limit // 2, limit // 2
    text = brief.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


class UserError(Exception):
    """A problem the user can fix: the message names it, the hint says how."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class ConfigError(UserError):
    """Bad names, values or files given to a command or a config file.

    ``problems`` lists (field, message) pairs when several things are wrong at once,
    so callers such as the grid validator can point each one at its line.
    """

    def __init__(self, message: str, hint: str | None = None, problems: list[tuple[str, str]] | None = None):
        super().__init__(message, hint)
        self.problems = problems or [("", message if not hint else f"{message} ({hint})")]


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """pydantic errors as (dotted field, message) pairs, for a ``ConfigError``'s ``problems``."""
    return [(".".join(shorten(str(p)) for p in err["loc"]) or "value", err["msg"]) for err in exc.errors()]


def format_validation_error(exc: ValidationError) -> str:
    """pydantic errors as one line: ``field: message; field: message``."""
    return "; ".join(f"{field}: {message}" for field, message in validation_problems(exc))


class DataError(UserError):
    """A dataset or data file is missing or malformed."""


class MissingExtraError(UserError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the Python package '{package}', which is not installed.",
            hint=f"pip install 'llmexplore[{extra}]'",
        )


def require(module: str, extra: str, purpose: str):
    """Import an optional dependency lazily, or stop with the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(module.split(".")[0], extra, purpose) from exc
