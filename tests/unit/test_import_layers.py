"""Imports point down the layers of docs/ARCHITECTURE.md, and no modules import each other round in a circle.

Every import counts, also one inside a function or under ``TYPE_CHECKING``, so the test fails the moment
someone adds an upward import anywhere. Command modules (``cli.py``, ``*_cli.py``, the registry
``commands.py``) are the top layer wherever they live; only other command modules may import them.
An environment family's folder (``envs/<family>/``) is a plug-in layer of its own: its networks, oracle
answers and screen build on the interfaces of the generic layers, and the generic layers reach it only
through its ``EnvFamily`` declaration (``tests/unit/test_env_families.py`` checks who imports a family).
``ALLOWED`` is the layer table of docs/ARCHITECTURE.md, and a test reads that table to keep the two equal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "llmexplore"
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
FOUNDATIONS = {"errors", "atomic", "settings", "data", "number_input", "yaml_input", "option_input", "paths",
               "lock_holders"}
LAYERS = ("foundations", "envs", "lm", "networks", "families", "methods", "agents", "benchmarks", "viz",
          "commands")
#: what each layer may import besides itself: the table of docs/ARCHITECTURE.md, row by row
ALLOWED: dict[str, set[str]] = {
    "foundations": set(),
    "envs": {"foundations"},
    "lm": {"foundations", "envs"},
    #: networks shared by the engine and the methods: a layer below both
    "networks": {"foundations", "envs"},
    #: a family may import another family's modules (MiniHack reuses NetHack's): the same layer
    "families": {"foundations", "envs", "lm", "networks", "agents", "viz"},
    #: only the method modules written for a family (named in test_env_families.py) import "families";
    #: of "agents", only its interface for methods (agents/for_methods.py; test_layer_rules.py)
    "methods": {"foundations", "envs", "lm", "networks", "agents", "families"},
    "agents": {"foundations", "envs", "lm", "networks", "methods"},
    "benchmarks": {"foundations", "envs", "lm", "networks", "methods", "agents"},
    "viz": {"foundations", "envs", "lm", "networks", "methods", "agents", "benchmarks"},
    "commands": set(LAYERS),
}
#: circles a change under way removes (none today)
KNOWN_CIRCLES: list[list[str]] = []


def layer_of_module(parts: tuple[str, ...], package: Path = PACKAGE) -> str:
    """The layer of ``llmexplore.<parts>``."""
    if parts[-1] in ("__main__", "cli", "commands") or parts[-1].endswith("_cli"):
        return "commands"
    head = parts[0]
    if head == "envs" and len(parts) > 1 and (package / "envs" / parts[1]).is_dir():
        return "families"
    return "foundations" if head in FOUNDATIONS | {"__init__"} else head


def _module_names(package: Path) -> dict[tuple[str, ...], Path]:
    """Module parts below ``llmexplore`` (a package by its folder) -> file."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        out[parts[:-1] if parts[-1] == "__init__" else parts] = path
    return out


def imported_modules(path: Path, package: Path,
                     known: dict[tuple[str, ...], Path] | None = None) -> list[tuple[int, tuple[str, ...]]]:
    """(line, module parts below ``llmexplore``) of every import of our own modules in a file.

    With ``known`` (the package's modules), ``from a.b import c`` names the module ``a.b.c`` when there is
    one, else ``a.b``: the module whose code the import runs.
    """
    out = []
    package_parts = path.relative_to(package.parent).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                module = ".".join(base + ((node.module,) if node.module else ()))
            else:
                module = node.module or ""
            names = [module]
            if known is not None:
                names = [f"{module}.{alias.name}" if tuple(f"{module}.{alias.name}".split("."))[1:] in known
                         else module for alias in node.names]
        for name in dict.fromkeys(names):
            parts = tuple(name.split("."))
            if parts[0] == "llmexplore" and len(parts) > 1:
                out.append((node.lineno, parts[1:]))
    return out


def upward_imports(package: Path = PACKAGE) -> list[str]:
    problems = []
    known = _module_names(package)  # so that ``from llmexplore import methods`` counts as importing methods
    for path in sorted(package.rglob("*.py")):
        own = layer_of_module(path.relative_to(package).with_suffix("").parts, package)
        for line, target in imported_modules(path, package, known):
            layer = layer_of_module(target, package)
            if layer != own and layer not in ALLOWED[own]:
                problems.append(f"{path.relative_to(package.parent)}:{line} ({own}) imports "
                                f"llmexplore.{'.'.join(target)} ({layer})")
    return problems


def import_circles(package: Path = PACKAGE) -> list[list[str]]:
    """Groups of modules that reach each other through their imports (strongly connected components of the
    import graph, Tarjan's algorithm), each sorted, in a stable order."""
    modules = _module_names(package)
    graph = {name: sorted({target for _, target in imported_modules(path, package, modules)
                           if target in modules and target != name})
             for name, path in modules.items()}
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on_stack: set[tuple[str, ...]] = set()
    circles: list[list[str]] = []

    def visit(node: tuple[str, ...]) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(".".join(("llmexplore",) + m) for m in group))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(circles)


def documented_layers(text: str) -> dict[str, set[str]]:
    """The layer table of docs/ARCHITECTURE.md: the first name in backticks of a row's first column is the
    layer, the layers named in backticks in its second column are what it may import ("every layer" for all)."""
    table: dict[str, set[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.lstrip().startswith("|"):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        if not names or names[0] not in LAYERS:
            continue
        allowed = set(LAYERS) if "every layer" in cells[1] else set(re.findall(r"`([^`]+)`", cells[1])) & set(LAYERS)
        table[names[0]] = allowed
    return table


def test_no_layer_imports_a_higher_one():
    assert upward_imports() == []


def test_the_layer_table_of_the_docs_is_the_one_enforced():
    assert documented_layers(ARCHITECTURE.read_text()) == ALLOWED


def test_the_docs_name_every_foundation_module():
    row = next(li for li in ARCHITECTURE.read_text().splitlines() if li.startswith("| `foundations`"))
    assert set(re.findall(r"`([^`/.]+)(?:/|\.py)?`", row.split("|")[1])) - {"foundations"} == FOUNDATIONS


def test_no_modules_import_each_other_in_a_circle():
    circles = import_circles()
    new = [c for c in circles if c not in KNOWN_CIRCLES]
    assert not new, "modules importing each other round in a circle:\n" + "\n".join(" <-> ".join(c) for c in new)


@pytest.mark.parametrize("layer", ["envs", "lm"])
def test_envs_and_lm_import_no_methods_agents_or_benchmarks(layer):
    assert not ALLOWED[layer] & {"methods", "agents", "benchmarks"}


def test_the_check_sees_upward_imports_inside_functions_and_relative_ones(tmp_path):
    package = tmp_path / "llmexplore"
    (package / "envs" / "crafter").mkdir(parents=True)
    (package / "envs" / "probe.py").write_text("def f():\n    from llmexplore.benchmarks import record\n")
    (package / "envs" / "crafter" / "probe.py").write_text("from ...methods import rnd\nfrom .. import base\n")
    (package / "methods").mkdir()
    (package / "methods" / "cli.py").write_text("import llmexplore.benchmarks.grid\n")
    (package / "agents").mkdir()
    (package / "agents" / "__init__.py").write_text("")
    (package / "agents" / "probe.py").write_text("from llmexplore.commands import command\n")
    (package / "lm").mkdir()
    (package / "lm" / "probe.py").write_text("from llmexplore import agents\n")
    assert upward_imports(package) == [
        "llmexplore/agents/probe.py:1 (agents) imports llmexplore.commands (commands)",
        "llmexplore/envs/crafter/probe.py:1 (families) imports llmexplore.methods (methods)",
        "llmexplore/envs/probe.py:2 (envs) imports llmexplore.benchmarks (benchmarks)",
        "llmexplore/lm/probe.py:1 (lm) imports llmexplore.agents (agents)",
    ]


def test_the_circle_check_names_each_circle_also_through_functions_and_submodules(tmp_path):
    package = tmp_path / "llmexplore"
    (package / "envs").mkdir(parents=True)
    (package / "envs" / "__init__.py").write_text("from llmexplore.envs.registry import get\n")
    (package / "envs" / "registry.py").write_text("def get():\n    from llmexplore.envs import ids\n")
    (package / "envs" / "ids.py").write_text("from . import registry\n")
    (package / "envs" / "base.py").write_text("from llmexplore.envs import ids\n")  # into a circle, not round
    (package / "lm").mkdir()
    (package / "lm" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from llmexplore.lm.b import B\n")
    (package / "lm" / "b.py").write_text("import llmexplore.lm.a\n")
    assert import_circles(package) == [["llmexplore.envs.ids", "llmexplore.envs.registry"],
                                       ["llmexplore.lm.a", "llmexplore.lm.b"]]


def test_the_docs_table_reader_reads_each_row(tmp_path):
    text = ("| layer | may import |\n| --- | --- |\n| `envs` | `foundations` |\n"
            "| `agents` | `foundations`, `lm` (its settings) |\n| `commands` (`cli.py`) | every layer |\n")
    assert documented_layers(text) == {"envs": {"foundations"}, "agents": {"foundations", "lm"},
                                       "commands": set(LAYERS)}


def test_no_module_of_the_package_shadows_the_standard_library():
    """A folder of ours on sys.path (a worker's PYTHONPATH, a script run from inside the package) must not
    hide a standard module: a top-level `numbers.py` once broke every Ray worker's `import decimal`."""
    import sys

    clashes = sorted(p.name for p in [*PACKAGE.glob("*.py"), *PACKAGE.glob("*/__init__.py")]
                     if (p.parent.name if p.name == "__init__.py" else p.stem) in sys.stdlib_module_names)
    assert clashes == []
