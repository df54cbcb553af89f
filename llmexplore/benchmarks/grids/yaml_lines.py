"""YAML that remembers where each value came from, so errors can name the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from llmexplore.errors import ConfigError, shown
from llmexplore.yaml_input import SafeLoader, load_yaml


class LineDict(dict):
    """A mapping from YAML; ``lines[key]`` is the 1-based line of that key's value."""

    line: int = 0
    lines: dict[Any, int]


class LineList(list):
    """A sequence from YAML; ``lines[i]`` is the 1-based line of item i."""

    line: int = 0
    lines: list[int]


class _Loader(SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: key {shown(key)} appears twice in one mapping")
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = value_node.start_mark.line + 1
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load(path: str | Path) -> LineDict:
    """A YAML settings file whose mappings and lists remember their lines (``yaml_input.load_yaml``'s checks)."""
    path = Path(path)
    data = load_yaml(path, _Loader)
    if not isinstance(data, LineDict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    return data


def line_of(container: Any, key: Any, default: int = 0) -> int:
    """The 1-based line of ``container[key]`` in its YAML file; the container's own line when the key has
    none, and ``default`` for data that did not come from YAML."""
    lines = getattr(container, "lines", None)
    if isinstance(lines, dict):
        return lines.get(key, getattr(container, "line", default))
    if isinstance(lines, list) and isinstance(key, int) and key < len(lines):
        return lines[key]
    return getattr(container, "line", default)


def plain(value: Any) -> Any:
    """Drop line bookkeeping: plain dicts and lists all the way down."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
