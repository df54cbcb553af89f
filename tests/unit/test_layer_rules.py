"""Two rules of docs/ARCHITECTURE.md that the layer table alone does not hold.

* ``methods/`` imports nothing from ``agents/`` beyond the engine's interface for methods
  (``agents/for_methods.py``): a method that plays a trained policy goes through it, so the engine's
  modules can change inside without a method noticing.
* ``lm/`` names no method: no module of the LM layer (commands aside) imports one, or names one in
  its code (an identifier, or a string shaped like a key or a path: prose in help texts and the
  oracle's changelog may mention a method, as its docstrings may). Questions, oracle answers and jobs of a
  method live with the method or with the family whose game they know.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.unit.test_import_layers import PACKAGE, imported_modules, layer_of_module

INTERFACE = ("agents", "for_methods")
#: word stems of the built-in methods' names (``none`` is an ordinary word and left out)
METHOD_WORDS = ("rnd", "apt", "e3b", "icm", "noveld", "ellm", "motif", "oni", "maestro")
#: a string that names something (a key, a kind, a module path), not a sentence
KEY_LIKE = re.compile(r"[\w.:/-]+")


def methods_reaching_into_agents(package: Path = PACKAGE) -> list[str]:
    """``path:line module`` of every import in ``methods/`` of an ``agents`` module other than the interface."""
    problems = []
    for path in sorted((package / "methods").rglob("*.py")):
        for line, target in imported_modules(path, package):
            if target[0] == "agents" and target != INTERFACE:
                problems.append(f"{path.relative_to(package.parent)}:{line} llmexplore.{'.'.join(target)}")
    return problems


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (of the module, a class or a function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def method_names_in_code(path: Path) -> list[str]:
    """``line: word`` where the code of ``path`` names a method: imports, identifiers, key-like strings."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    pattern = re.compile(rf"(?<![a-z0-9])({'|'.join(METHOD_WORDS)})(?![a-z0-9])", re.I)
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            texts = [node.value] if KEY_LIKE.fullmatch(node.value) else []
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            texts = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            texts = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
        for text in texts:
            for word in pattern.findall(text.replace("_", " ")):
                found.append(f"{getattr(node, 'lineno', 0)}: {word}")
    return found


def lm_naming_methods(package: Path = PACKAGE) -> list[str]:
    """Where a non-command module of ``lm/`` imports or names a method."""
    problems = []
    for path in sorted((package / "lm").rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if layer_of_module(parts, package) == "commands":
            continue
        where = path.relative_to(package.parent)
        problems += [f"{where}:{line} imports llmexplore.{'.'.join(target)}"
                     for line, target in imported_modules(path, package) if target[0] == "methods"]
        problems += [f"{where}:{hit}" for hit in method_names_in_code(path)]
    return problems


def test_methods_reach_the_engine_only_through_its_interface():
    assert methods_reaching_into_agents() == []


def test_the_lm_layer_names_no_method():
    assert lm_naming_methods() == []


def test_the_checks_see_what_they_forbid(tmp_path):
    package = tmp_path / "llmexplore"
    (package / "methods").mkdir(parents=True)
    (package / "methods" / "probe.py").write_text(
        "def f():\n    from llmexplore.agents.for_methods import load_policy\n"
        "    from llmexplore.agents.rollout import play_episode\n")
    (package / "lm" / "oracle").mkdir(parents=True)
    (package / "lm" / "oracle" / "probe.py").write_text(
        '"""Motif and ONI may be named in a docstring."""\nfrom llmexplore.lm.oracle import maestro\n'
        'KIND = "maestro_code"\ndef g():\n    """ELLM\'s goals."""\n    return "help text naming Motif"\n')
    (package / "lm" / "cli.py").write_text("from llmexplore.methods.motif.cli import run\n")
    assert methods_reaching_into_agents(package) == ["llmexplore/methods/probe.py:3 llmexplore.agents.rollout"]
    assert lm_naming_methods(package) == ["llmexplore/lm/oracle/probe.py:2: maestro",
                                          "llmexplore/lm/oracle/probe.py:3: maestro"]
