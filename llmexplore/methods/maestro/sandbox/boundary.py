"""What crosses between the host and generated code: plain copies, never the host's own objects.

Generated code may assign into any dict or list it is handed (the validator allows
``obs['x'] = ...``, ``memory[k] = ...`` and ``.append``). Handing it the host's own objects let
it rewrite the wrapper's record of when the skill started (then crash the wrapper), change
``obs['available']`` before its answer was checked against it, and grow state that no limit
counted. So every argument goes in as a fresh copy of plain data, and state the code keeps
between calls (a policy's ``memory``) comes back only as a checked copy: plain data, at most
``Limits.max_memory_items`` items, nested at most ``MAX_DEPTH`` deep.
"""

from __future__ import annotations

from typing import Any

#: immutable values that cross as they are
_ATOMS = frozenset({str, int, float, bool, type(None)})
#: containers nested deeper than this are refused (a policy's memory needs a few levels at most)
MAX_DEPTH = 8


class NotPlain(Exception):
    """A value is not plain data (or too big or too deep) to cross the boundary; says why."""


def plain_copy(value: Any, max_items: int, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of ``value`` that shares no mutable object with it.

    Plain data only: str, int, float, bool, None, and dicts, lists, tuples, sets and frozensets of
    them (exact types, not subclasses). Raises ``NotPlain`` for anything else, for more than
    ``max_items`` items in all (nested items counted, shared ones once per reference) or for
    nesting deeper than ``max_depth``; the walk stops as soon as either limit is passed.
    """
    left = [max_items]  # items still allowed

    def copy(item: Any, depth: int) -> Any:
        kind = type(item)
        if kind in _ATOMS:
            return item
        if depth >= max_depth:
            raise NotPlain(f"it is nested more than {max_depth} levels deep")
        if kind is dict or kind is list or kind is tuple or kind is set or kind is frozenset:
            left[0] -= len(item)
            if left[0] < 0:
                raise NotPlain(f"it holds more than {max_items} items (nested items counted)")
        else:
            raise NotPlain(f"it holds a value of type {kind.__name__} (only str, int, float, bool, None, "
                           "dict, list, tuple and set may be kept)")
        deeper = depth + 1
        if kind is dict:
            return {k if type(k) in _ATOMS else copy(k, deeper): v if type(v) in _ATOMS else copy(v, deeper)
                    for k, v in item.items()}
        items = [v if type(v) in _ATOMS else copy(v, deeper) for v in item]
        if kind is tuple and all(a is b for a, b in zip(items, item)):
            return item  # a tuple of immutable values is immutable itself
        return kind(items) if kind is not list else items

    return copy(value, 0)
