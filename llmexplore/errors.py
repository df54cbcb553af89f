"""Errors that reach the user as one clear message instead of a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


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
    return [(".".join(str(p) for p in err["loc"]) or "value", err["msg"]) for err in exc.errors()]


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
