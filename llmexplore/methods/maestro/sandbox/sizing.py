"""How much work a value can cause in one C-level operation, measured with a bounded walk.

A comparison, a hash, ``str()`` or ``sorted()`` of a nested value runs in C over every item it
holds, and shared references make that far more than what was allocated:
``[[0] * 99999] * 99999`` costs 200k items to build but 10^10 to compare. ``weight`` counts the
items a walk of the value visits, stopping as soon as the count passes a cap, so the walk
itself costs at most about ``cap`` steps. ``bounded_repr`` formats any value from generated code
with a size cap, for error messages.
"""

from __future__ import annotations

import reprlib
from typing import Any

_CONTAINERS = (list, tuple, set, frozenset, dict)
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))


class TooHeavy(Exception):
    """A value is heavier than the cap a walk was given."""

    def __init__(self, weight: int, cap: int):
        self.weight = weight
        self.cap = cap
        super().__init__(f"a value of more than {cap} items (nested items counted)")


def weight(value: Any, cap: int, chars: bool = False) -> int:
    """Items a C-level walk of ``value`` visits (containers count their items, nested ones too).

    Strings count one item per 64 characters (comparing or hashing them is a fast scan), or one
    per character with ``chars`` (formatting them copies every character). Raises ``TooHeavy``
    as soon as the count passes ``cap``: the walk never costs much more than ``cap`` steps.
    """
    total = 1  # the value itself; a container then counts its items, each item what it holds
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) if chars else len(item) // 64
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() // 64
        elif isinstance(item, dict):
            total += len(item)
            if total <= cap:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, _CONTAINERS) or isinstance(item, _VIEWS):
            total += len(item)
            if total <= cap:
                stack.extend(item)
        elif isinstance(item, range):
            total += len(item) if chars else 0
        if total > cap:
            raise TooHeavy(total, cap)
    return total


def is_container(value: Any) -> bool:
    """Whether ``value`` is a list, tuple, set, frozenset, dict or dict view: a value to weigh before C walks it."""
    return isinstance(value, _CONTAINERS) or isinstance(value, _VIEWS)


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlong = 60
for _attr in ("maxlist", "maxtuple", "maxset", "maxfrozenset", "maxdict", "maxdeque", "maxarray"):
    setattr(_REPR, _attr, 8)


def bounded_repr(value: Any, limit: int = 300) -> str:
    """A repr of any value from generated code, at most ``limit`` characters, built in bounded time."""
    try:
        text = _REPR.repr(value)
    except Exception as exc:  # a value whose repr fails is described by its type
        text = f"<{type(value).__name__} (repr failed: {type(exc).__name__})>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_exception(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` for an exception raised inside generated code, with a size cap.

    The message comes from the exception's arguments through ``bounded_repr`` (a ``KeyError``
    carries the key, which generated code chose and may be huge); ``str(exc)`` is never called.
    """
    args = exc.args
    if len(args) == 1 and isinstance(args[0], str) and not isinstance(exc, KeyError):
        message = args[0] if len(args[0]) <= limit else args[0][: limit - 3] + "..."
    elif not args:
        message = ""
    else:
        message = ", ".join(bounded_repr(a, limit) for a in args[:3])
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
