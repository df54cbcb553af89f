"""Small modules with one job, short functions: no function in llmexplore/ over 60 lines, no module over 450.

Lines are counted as written, docstrings and comments included (what a reader has to read). A function
that outgrows the limit is split into named steps; a module, by job.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "llmexplore"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450


def long_functions(package: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (lines)`` of every function or method longer than ``limit`` lines, decorators aside."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > limit:
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} ({lines})")
    return found


def long_modules(package: Path = PACKAGE, limit: int = MAX_MODULE_LINES) -> list[str]:
    """``path (lines)`` of every module longer than ``limit`` lines."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(package.parent)} ({lines})")
    return found


def test_no_function_is_over_60_lines():
    assert long_functions() == []


def test_no_module_is_over_450_lines():
    assert long_modules() == []


def test_the_counts_see_a_long_function_and_module(tmp_path):
    package = tmp_path / "llmexplore"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (package / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}" + "# pad\n" * 390)
    assert long_functions(package) == ["llmexplore/long.py:5 long (61)"]
    assert long_modules(package) == ["llmexplore/long.py (455)"]
