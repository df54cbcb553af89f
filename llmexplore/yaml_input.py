"""Reading the text and YAML files a user hands us: one reader, so every command refuses the same
bad files the same way (not UTF-8, a folder, an alias bomb, nesting too deep) with a clear error.

YAML aliases let a few lines stand for billions of values (``a: &a [x, x]``, ``b: &b [*a, *a]``,
...); building that is cheap (aliases share objects) but anything that walks it, such as a grid's
expansion or a JSON dump, never ends. ``SafeLoader`` counts every value a document stands for,
aliases counted each time they are used, and refuses a document past ``MAX_VALUES`` before
anything is built.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from llmexplore.errors import PATH_ECHO_LIMIT, ConfigError, shorten, shown

#: values one YAML document may stand for once its aliases are expanded
MAX_VALUES = 1_000_000


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of ``path``, or a ConfigError naming the file and what is wrong with it."""
    path = Path(path)
    shown_path = shorten(str(path), PATH_ECHO_LIMIT)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {shown_path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{shown_path} is a folder, not a {what}", hint=f"name the {what} itself") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {shown_path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                          hint=f"save the {what} as UTF-8") from None


class SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents standing for more than ``MAX_VALUES`` values, and
    explicitly tagged values it cannot build."""

    max_values = MAX_VALUES

    def get_single_node(self) -> Any:
        """The document's node, refused when aliases would expand it past ``max_values``."""
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node, self.max_values)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A node's value; PyYAML builds a tagged scalar with bare Python calls (``!!float abc``: ValueError,
        ``!!timestamp x``: AttributeError, ``!!bool x``: KeyError, ``!!float`` alone: IndexError), which are
        raised here as YAML errors at the value's line."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            value = f" {shown(node.value)}" if isinstance(node, yaml.ScalarNode) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read the {shorten(tag)} value{value} ({shorten(str(exc))})", node.start_mark,
            ) from None


#: numbers in exponent form that PyYAML (YAML 1.1) reads as text: ``1e-5``, ``1.0e5``, ``3E+2`` (its own float
#: needs a dot and a signed exponent, ``1.0e+5``). Users write them as numbers, and YAML 1.2 reads them so.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
SafeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+.0123456789"))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node, limit: int) -> None:
    """Count the values ``root`` stands for, each alias as often as it is used (memoised, so this takes
    time in the number of distinct nodes); refuse a recursive alias or a count past ``limit``."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # nodes whose children are being counted: meeting one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > limit:
                line = node.start_mark.line + 1
                raise ConfigError(f"line {line}: this YAML stands for more than {limit:,} values once its "
                                  f"aliases (*name) are expanded",
                                  hint="write the values out, or use fewer nested aliases")
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConfigError(f"line {node.start_mark.line + 1}: a YAML alias refers to a value that contains it",
                              hint="remove the recursive alias")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def parse_yaml(text: str, source: str, loader: type[SafeLoader] = SafeLoader) -> Any:
    """Parse YAML text; ``source`` (a path, or 'option x') names it in errors."""
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        context = ""
        if exc.context_mark is not None and exc.context:
            context = f" ({exc.context} at line {exc.context_mark.line + 1})"
        raise ConfigError(f"{where}: not valid YAML: {exc.problem}{context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc.message}", hint=exc.hint) from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply to read",
                          hint="flatten the nesting (a few levels are enough for any setting)") from None


def load_yaml(path: str | Path, loader: type[SafeLoader] = SafeLoader) -> Any:
    """A YAML file's contents, through ``read_text`` and ``parse_yaml``."""
    return parse_yaml(read_text(path, "YAML file"), str(path), loader)
