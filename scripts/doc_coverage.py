"""How much of llmexplore is documented: configuration fields and public functions.

Configuration fields are the fields of every pydantic model defined in llmexplore (run specs,
training, LM and method options, grid files, records): one counts as documented when its
``Field`` has a ``description``. Public functions are module-level functions and methods of
public classes whose names do not start with ``_``: documented when they have a docstring (a
second figure also counts overrides of a documented base method, which inherit its docstring).
Command-line options are the ``add_argument`` calls of the commands: described when given a
``help``. All three are read from the source (nothing is imported), so optional extras need not be installed.

    python scripts/doc_coverage.py            # the three shares
    python scripts/doc_coverage.py --missing  # and every undocumented field and function
    python scripts/doc_coverage.py --json     # all of it as JSON (tests/unit/test_doc_coverage.py)
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "llmexplore"
#: class-level annotations of a model that are not fields
NOT_FIELDS = {"model_config"}
#: options whose action class sets their help itself (cli.py's ``_VersionAction``)
HELP_FROM_ACTION = {"--version"}


@dataclass
class Tally:
    """Documented and undocumented items, by dotted name."""

    documented: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.documented) + len(self.missing)

    @property
    def share(self) -> float:
        return len(self.documented) / self.total if self.total else 1.0


def parsed_modules(root: Path = PACKAGE) -> dict[str, ast.Module]:
    """Every module of the package, by dotted name, parsed."""
    return {".".join(path.relative_to(root.parent).with_suffix("").parts): ast.parse(path.read_text("utf-8"))
            for path in sorted(root.rglob("*.py"))}


def _base_name(node: ast.expr) -> str:
    """``BaseModel`` for ``BaseModel``, ``pydantic.BaseModel`` or ``Generic[...]``-free forms."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def model_classes(modules: dict[str, ast.Module]) -> list[tuple[str, ast.ClassDef]]:
    """(qualified name, class) of every pydantic model: a class deriving from ``BaseModel`` directly or
    through other models of the package (matched by class name)."""
    classes = [(f"{module}.{node.name}", node) for module, tree in modules.items()
               for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    model_names, grew = {"BaseModel"}, True
    while grew:
        found = {node.name for _, node in classes if any(_base_name(b) in model_names for b in node.bases)}
        grew = not found <= model_names
        model_names |= found
    return [(name, node) for name, node in classes if any(_base_name(b) in model_names for b in node.bases)]


def _is_classvar(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _base_name(target) == "ClassVar"


def _described(value: ast.expr | None) -> bool:
    """Whether a field's default is ``Field(..., description=<not empty>)``."""
    if not (isinstance(value, ast.Call) and _base_name(value.func) == "Field"):
        return False
    for keyword in value.keywords:
        if keyword.arg == "description":
            return not (isinstance(keyword.value, ast.Constant) and not str(keyword.value.value).strip())
    return False


def field_tally(models: list[tuple[str, ast.ClassDef]]) -> Tally:
    """The fields each model declares itself (inherited ones count where they are declared)."""
    tally = Tally()
    for name, node in models:
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            field_name = stmt.target.id
            if field_name in NOT_FIELDS or field_name.startswith("_") or _is_classvar(stmt.annotation):
                continue
            (tally.documented if _described(stmt.value) else tally.missing).append(f"{name}.{field_name}")
    return tally


def function_tally(modules: dict[str, ast.Module]) -> Tally:
    """Public module-level functions and public methods of public classes, with their own docstring."""
    tally = Tally()
    for label, function, _ in _public_functions(modules):
        (tally.documented if ast.get_docstring(function) else tally.missing).append(label)
    return tally


def inherited_docstrings(modules: dict[str, ast.Module]) -> list[str]:
    """The undocumented public methods that override a documented method of a base class of the package
    (``help()`` and ``inspect.getdoc`` show the base's docstring for them)."""
    classes: dict[str, list[ast.ClassDef]] = {}
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)

    def documented_in_bases(owner: ast.ClassDef, name: str) -> bool:
        seen, todo = set(), [_base_name(b) for b in owner.bases]
        while todo:
            base = todo.pop()
            if base in seen or base not in classes:
                continue
            seen.add(base)
            for node in classes[base]:
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name \
                            and ast.get_docstring(item):
                        return True
                todo += [_base_name(b) for b in node.bases]
        return False

    return [label for label, function, owner in _public_functions(modules)
            if owner is not None and not ast.get_docstring(function) and documented_in_bases(owner, function.name)]


#: modules that are data, not an API: the oracle's canned MaestroMotif code answers are cut out of these files
#: word for word (a docstring would change the answer and count against the sandbox's size limits)
DATA_MODULES = ("llmexplore.methods.maestro.maestro_reference.",)


def _public_functions(modules: dict[str, ast.Module]):
    """(label, function, its class or None) of every public function and public method of a public class."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for module, tree in modules.items():
        if module.startswith(DATA_MODULES):
            continue
        for node in tree.body:
            if isinstance(node, functions) and not node.name.startswith("_"):
                yield f"{module}.{node.name}", node, None
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    if isinstance(item, functions) and not item.name.startswith("_"):
                        yield f"{module}.{node.name}.{item.name}", item, node


def option_tally(modules: dict[str, ast.Module]) -> Tally:
    """Every ``add_argument(...)`` call: described when it passes a non-empty ``help``."""
    tally = Tally()
    for module, tree in modules.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"):
                continue
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            label = f"{module}:{node.lineno} {names[0] if names else '?'}"
            given = any(k.arg == "help" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                        for k in node.keywords)
            helped = given or bool(set(names) & HELP_FROM_ACTION)
            (tally.documented if helped else tally.missing).append(label)
    return tally


def report(name: str, tally: Tally, show_missing: bool) -> None:
    print(f"{name}: {len(tally.documented)}/{tally.total} documented ({tally.share:.0%})")
    if show_missing:
        for label in tally.missing:
            print(f"  missing: {label}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list every undocumented field and function")
    parser.add_argument("--json", action="store_true", help="print the models, counts and lists as JSON")
    args = parser.parse_args(argv)
    modules = parsed_modules()
    models = model_classes(modules)
    fields, functions, options = field_tally(models), function_tally(modules), option_tally(modules)
    if args.json:
        print(json.dumps({"models": [name for name, _ in models], "fields": dataclasses.asdict(fields),
                          "functions": dataclasses.asdict(functions), "options": dataclasses.asdict(options),
                          "functions_inheriting_a_docstring": inherited_docstrings(modules)}, indent=1))
        return 0
    report("configuration fields", fields, args.missing)
    report("command-line options", options, args.missing)
    report("public functions", functions, args.missing)
    inherited = len(inherited_docstrings(modules))
    print(f"  with the docstrings overrides inherit from documented base methods: "
          f"{len(functions.documented) + inherited}/{functions.total} "
          f"({(len(functions.documented) + inherited) / max(functions.total, 1):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
