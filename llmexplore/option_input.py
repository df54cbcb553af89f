"""``key=value`` options as commands take them (``-o``, ``-t``, ``--lm``, backend options): split, read as
YAML scalars, merged into nested settings, with a clear error for a pair that is not ``key=value``."""

from __future__ import annotations

import re
from typing import Any, Sequence

from llmexplore.errors import ConfigError, shown
from llmexplore.yaml_input import parse_yaml

#: a comma that starts another ``key=`` in one argument (``--lm backend=openai,answer=score``); a comma inside a
#: value (``stop=[a,b]``, ``goal=eat, then rest``) is kept because no ``key=`` follows it
_NEXT_PAIR = re.compile(r",(?=\s*[A-Za-z_][\w.]*=)")


def split_option_pairs(pairs: Sequence[str]) -> list[str]:
    """Repeated options and comma-separated ones alike: ``["a=1,b=2", "c=3"]`` -> ``["a=1", "b=2", "c=3"]``."""
    return [part.strip() for pair in pairs for part in _NEXT_PAIR.split(pair)]


def parse_option_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs, given repeatedly or comma-separated; values are read as YAML scalars (numbers,
    booleans, lists)."""
    out: dict[str, Any] = {}
    for pair in split_option_pairs(pairs):
        if "=" not in pair:
            raise ConfigError(f"option {shown(pair)} is not of the form key=value")
        key, value = pair.split("=", 1)
        try:
            out[key.strip()] = parse_yaml(value, f"option {key.strip()}")
        except ConfigError as exc:
            if "not valid YAML" not in exc.message:  # an alias bomb or nesting too deep
                raise
            out[key.strip()] = value
    return out


def merge_option_pairs(base: dict[str, Any], pairs: Sequence[str]) -> dict[str, Any]:
    """``base`` updated by ``key=value`` pairs, where a dotted key (``sf_args.with_wandb=true``) sets a
    nested value and leaves the rest of that mapping as it was."""
    out = dict(base)
    for key, value in parse_option_pairs(pairs).items():
        *parents, leaf = key.split(".")
        target = out
        for name in parents:
            child = target.get(name)
            target[name] = dict(child) if isinstance(child, dict) else {}
            target = target[name]
        target[leaf] = value
    return out
