"""Imports point down the layers of docs/ARCHITECTURE.md: a lower layer never imports a higher one.

Every import counts, also one inside a function, so the test fails the moment someone adds an
upward import anywhere. Command modules (``cli.py``, ``*_cli.py``) are the top layer wherever they live; only
other command modules may import them. An environment family's folder (``envs/<family>/``) is a plug-in:
its networks, oracle answers and screen build on the interfaces of the generic layers, and the generic
layers reach it only through its ``EnvFamily`` declaration (``tests/unit/test_env_families.py`` checks
who imports a family).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "llmexplore"
FOUNDATIONS = {"errors", "atomic", "settings", "data", "number_input", "yaml_input", "paths", "__init__"}
#: what each layer may import besides itself and the foundations
ALLOWED: dict[str, set[str]] = {
    "foundations": set(),
    "envs": set(),
    "lm": {"envs"},
    #: a family may import another family's modules (MiniHack reuses NetHack's)
    "families": {"envs", "lm", "agents", "viz", "families"},
    #: only the method modules written for a family (named in test_env_families.py)
    "methods": {"envs", "lm", "agents", "families"},
    "agents": {"envs", "lm", "methods"},
    "benchmarks": {"envs", "lm", "methods", "agents", "viz"},
    "viz": {"envs", "lm", "methods", "agents", "benchmarks"},
    "cli": {"envs", "lm", "methods", "agents", "benchmarks", "viz", "cli"},
}


def layer_of_module(parts: tuple[str, ...], package: Path = PACKAGE) -> str:
    """The layer of ``llmexplore.<parts>``."""
    if parts[-1] == "__main__" or parts[-1] == "cli" or parts[-1].endswith("_cli"):
        return "cli"
    head = parts[0]
    if head == "envs" and len(parts) > 1 and (package / "envs" / parts[1]).is_dir():
        return "families"
    return "foundations" if head in FOUNDATIONS else head


def imported_modules(path: Path, package: Path) -> list[tuple[int, tuple[str, ...]]]:
    """(line, module parts below ``llmexplore``) of every import of our own modules in a file."""
    out = []
    package_parts = path.relative_to(package.parent).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                names = [".".join(base + ((node.module,) if node.module else ()))]
            elif node.module:
                names = [node.module]
        for name in names:
            parts = tuple(name.split("."))
            if parts[0] == "llmexplore" and len(parts) > 1:
                out.append((node.lineno, parts[1:]))
    return out


def upward_imports(package: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        own = layer_of_module(path.relative_to(package).with_suffix("").parts, package)
        for line, target in imported_modules(path, package):
            layer = layer_of_module(target, package)
            if layer not in (own, "foundations") and layer not in ALLOWED[own]:
                problems.append(f"{path.relative_to(package.parent)}:{line} ({own}) imports "
                                f"llmexplore.{'.'.join(target)} ({layer})")
    return problems


def test_no_layer_imports_a_higher_one():
    assert upward_imports() == []


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
    assert upward_imports(package) == [
        "llmexplore/envs/crafter/probe.py:1 (families) imports llmexplore.methods (methods)",
        "llmexplore/envs/probe.py:2 (envs) imports llmexplore.benchmarks (benchmarks)",
    ]


def test_no_module_of_the_package_shadows_the_standard_library():
    """A folder of ours on sys.path (a worker's PYTHONPATH, a script run from inside the package) must not
    hide a standard module: a top-level `numbers.py` once broke every Ray worker's `import decimal`."""
    import sys

    package = Path(__file__).resolve().parents[2] / "llmexplore"
    clashes = sorted(p.name for p in [*package.glob("*.py"), *package.glob("*/__init__.py")]
                     if (p.parent.name if p.name == "__init__.py" else p.stem) in sys.stdlib_module_names)
    assert clashes == []
