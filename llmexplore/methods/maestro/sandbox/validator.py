"""Static checks on generated code: parse it with ``ast`` and refuse anything off the allow-list.

Every refusal names the first problem found and its line, in words an LM can act on (the
reason is fed back once for a regeneration). The checks, in order: size; syntax; top level
holds only function definitions, a docstring and constant assignments; the requested
functions exist with the right number of parameters; every node type is allowed; no name
starts with an underscore (that covers dunders and the sandbox's own helpers); every name
read is a parameter, a local, a top-level function or constant, or an allowed builtin;
attributes are allowed methods only; only named functions and methods are called; no
function reaches itself (recursion); keys read from the observation exist in the interface.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from llmexplore.errors import UserError
from llmexplore.methods.maestro.sandbox.rules import (ALLOWED_BUILTINS, ALLOWED_METHODS, ALLOWED_NODES,
                                                      DEFAULT_LIMITS, REFUSED_NODES, Limits)

#: the fields of a dict argument: key -> the fields of its value when that is a dict too, else None
Fields = Mapping[str, "Fields | None"]


class CodeRejected(UserError):
    """Generated code failed validation; ``reason`` says why (and ``line`` where, when known)."""

    def __init__(self, reason: str, line: int | None = None, hint: str | None = None):
        self.reason = f"line {line}: {reason}" if line else reason
        self.line = line
        super().__init__(f"generated code rejected: {self.reason}", hint=hint)


@dataclass(frozen=True)
class FunctionSpec:
    """A function the code must define: its name and parameters, and for each parameter the
    fields it has when it is a dict the interface documents (None: any keys, e.g. memory)."""

    name: str
    params: tuple[str, ...]
    param_fields: tuple[Fields | None, ...] = ()
    returns: str = "bool"
    #: parameters that are the code's own state across calls (a policy's ``memory``): the sandbox
    #: hands in a copy and takes the changed copy back once checked (boundary.py)
    state: tuple[str, ...] = ()

    def fields_of(self, index: int) -> Fields | None:
        """The documented fields of parameter ``index``; None when any key goes (or none are listed)."""
        return self.param_fields[index] if index < len(self.param_fields) else None


@dataclass
class ValidatedCode:
    """Source that passed every check, with its parsed tree (annotations still in place)."""

    source: str
    tree: ast.Module
    functions: tuple[str, ...]
    constants: tuple[str, ...] = field(default_factory=tuple)


def validate(source: str, required: Sequence[FunctionSpec], limits: Limits = DEFAULT_LIMITS) -> ValidatedCode:
    """Check ``source``; return it parsed, or raise ``CodeRejected`` naming the first problem."""
    if not isinstance(source, str):
        raise CodeRejected("the code is not text")
    if len(source) > limits.max_source_chars:
        raise CodeRejected(f"the code is {len(source)} characters long; "
                           f"the limit is {limits.max_source_chars}")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise CodeRejected(f"syntax error: {exc.msg}", exc.lineno) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise CodeRejected(f"the code cannot be parsed ({type(exc).__name__}: nesting too deep or "
                           "invalid text)") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > limits.max_nodes:
        raise CodeRejected(f"the code has {nodes} syntax nodes; the limit is {limits.max_nodes}")
    functions, constants = _top_level(tree)
    specs = {spec.name: spec for spec in required}
    for spec in required:
        if spec.name not in functions:
            defined = ", ".join(functions) or "none"
            raise CodeRejected(f"function '{spec.name}' is missing (functions defined: {defined})")
    _check_nodes(tree)
    for fn in functions.values():
        _FunctionChecker(fn, functions, constants, specs.get(fn.name)).run()
    _check_recursion(functions)
    return ValidatedCode(source, tree, tuple(functions), tuple(constants))


# -- top level ----------------------------------------------------------------------------------
def _top_level(tree: ast.Module) -> tuple[dict[str, ast.FunctionDef], list[str]]:
    functions: dict[str, ast.FunctionDef] = {}
    constants: list[str] = []
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.FunctionDef):
            if node.name in functions:
                raise CodeRejected(f"function '{node.name}' is defined twice", node.lineno)
            functions[node.name] = node
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str)):
            continue  # a docstring or a string left standing: harmless
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name)):
            if not _is_constant(node.value):
                raise CodeRejected(f"top-level '{node.targets[0].id} = ...' must be a constant (numbers, "
                                   "strings, True/False/None, or tuples of them)", node.lineno)
            constants.append(node.targets[0].id)
        else:
            what = REFUSED_NODES.get(type(node))
            reason = what or "only function definitions and constant assignments may appear at the top level"
            raise CodeRejected(reason, getattr(node, "lineno", None))
    for name in list(functions) + constants:
        _check_name(name, None)
        if name in ALLOWED_BUILTINS:
            raise CodeRejected(f"'{name}' is a builtin and may not be redefined")
    return functions, constants


def _is_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, str, bool, type(None)))
    if isinstance(node, ast.Tuple):
        return all(_is_constant(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))
    return False


def _check_nodes(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        kind = type(node)
        if kind in ALLOWED_NODES:
            continue
        reason = REFUSED_NODES.get(kind, f"{kind.__name__} is not allowed")
        raise CodeRejected(reason, getattr(node, "lineno", None))


def _check_name(name: str, line: int | None) -> None:
    if name.startswith("_"):
        raise CodeRejected(f"name '{name}' is not allowed (names starting with '_' are reserved)", line)


# -- inside one function ------------------------------------------------------------------------
class _FunctionChecker(ast.NodeVisitor):
    def __init__(self, fn: ast.FunctionDef, functions: Mapping[str, ast.FunctionDef],
                 constants: Sequence[str], spec: FunctionSpec | None):
        self.fn = fn
        self.functions = functions
        self.constants = set(constants)
        self.spec = spec
        self.params: list[str] = []
        self.locals: set[str] = set()
        #: parameter name -> the fields it has (interface dicts)
        self.dict_params: dict[str, Fields] = {}

    def run(self) -> None:
        fn, spec = self.fn, self.spec
        if fn.decorator_list:
            raise CodeRejected(f"function '{fn.name}' may not have decorators", fn.lineno)
        args = fn.args
        if (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults
                or args.kw_defaults):
            raise CodeRejected(f"function '{fn.name}' may only take plain positional parameters "
                               "(no defaults, *args or **kwargs)", fn.lineno)
        self.params = [a.arg for a in args.args]
        for name in self.params:
            _check_name(name, fn.lineno)
        if spec is not None:
            if len(self.params) != len(spec.params):
                raise CodeRejected(f"function '{fn.name}' must take {len(spec.params)} parameter(s) "
                                   f"({', '.join(spec.params)}); it takes {len(self.params)}", fn.lineno)
            for i, name in enumerate(self.params):
                fields = spec.fields_of(i)
                if fields is not None:
                    self.dict_params[name] = fields
        self.locals = self._assigned_names()
        clash = sorted(self.locals & (set(self.dict_params) | set(ALLOWED_BUILTINS) | set(self.functions)))
        if clash:
            raise CodeRejected(f"function '{fn.name}' assigns to '{clash[0]}', which names a parameter the "
                               "interface fills, a builtin or a function", fn.lineno)
        for arg in args.args:  # annotations are dropped before running, but must still read as plain names
            if arg.annotation is not None:
                self.visit(arg.annotation)
        if fn.returns is not None:
            self.visit(fn.returns)
        for stmt in fn.body:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        raise CodeRejected(f"nested function '{node.name}' is not allowed: define helpers at the top level",
                           node.lineno)

    def _assigned_names(self) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                _check_name(node.id, getattr(node, "lineno", None))
                names.add(node.id)
        return names

    # names ---------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        _check_name(node.id, node.lineno)
        if isinstance(node.ctx, ast.Store):
            return
        known = (node.id in self.params or node.id in self.locals or node.id in self.functions
                 or node.id in self.constants or node.id in ALLOWED_BUILTINS)
        if not known:
            builtins = ", ".join(sorted(ALLOWED_BUILTINS))
            raise CodeRejected(f"name '{node.id}' is not defined: use only the parameters, your own "
                               f"variables and functions, and the builtins {builtins}", node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)  # report the innermost problem first: it is what runs first
        if node.attr.startswith("_"):
            raise CodeRejected(f"attribute '.{node.attr}' is not allowed (names starting with '_' are "
                               "reserved)", node.lineno)
        if node.attr not in ALLOWED_METHODS:
            raise CodeRejected(f"attribute '.{node.attr}' is not allowed; the allowed methods are "
                               f"{', '.join(sorted(ALLOWED_METHODS))}", node.lineno)
        if not isinstance(node.ctx, ast.Load):
            raise CodeRejected(f"assigning to '.{node.attr}' is not allowed", node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, (ast.Name, ast.Attribute)):
            raise CodeRejected("only named functions and allowed methods may be called", node.lineno)
        if isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
            self._check_key(func.value, node.args[0], node.lineno)
        for kw in node.keywords:
            if kw.arg is None:
                raise CodeRejected("**-unpacking in calls is not allowed", node.lineno)
            _check_name(kw.arg, node.lineno)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._check_key(node.value, node.slice, node.lineno)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        endless = isinstance(node.test, ast.Constant) and bool(node.test.value)
        exits = any(isinstance(n, (ast.Break, ast.Return)) for stmt in node.body for n in ast.walk(stmt))
        if endless and not exits:
            raise CodeRejected("this while loop never ends (a true condition and no break or return)",
                               node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise CodeRejected("an annotation without a value is not allowed", node.lineno)
        self.visit(node.target)
        self.visit(node.annotation)  # dropped before running, but it must read as plain names too
        self.visit(node.value)

    # interface keys ------------------------------------------------------------------------------
    def _fields(self, value: ast.AST) -> Fields | None:
        """The documented fields of an expression that is an interface dict (obs, obs["features"], ...)."""
        if isinstance(value, ast.Name):
            return self.dict_params.get(value.id)
        if isinstance(value, ast.Subscript):
            parent = self._fields(value.value)
            key = _constant_key(value.slice)
            if parent is not None and key is not None:
                return parent.get(key)
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
                and value.args):
            parent = self._fields(value.func.value)
            key = _constant_key(value.args[0])
            if parent is not None and key is not None:
                return parent.get(key)
        return None

    def _check_key(self, value: ast.AST, key_node: ast.AST, line: int) -> None:
        fields = self._fields(value)
        key = _constant_key(key_node)
        if fields is None or key is None:
            return
        if key not in fields:
            raise CodeRejected(f"{_describe(value)} has no field '{key}'; its fields are "
                               f"{', '.join(sorted(fields))}", line)


def _constant_key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _describe(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every node we allow
        return "the value"


def _check_recursion(functions: Mapping[str, ast.FunctionDef]) -> None:
    """Refuse any cycle among the functions (a name reference counts: it may be passed as a key)."""
    edges = {name: {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in functions}
             for name, fn in functions.items()}
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(edges[name]):
            if state.get(nxt) == 1:
                cycle = " -> ".join(path[path.index(nxt):] + [nxt]) if nxt in path else f"{name} -> {nxt}"
                raise CodeRejected(f"recursion is not allowed ({cycle})", functions[nxt].lineno)
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[name] = 2

    for name in functions:
        if name not in state:
            visit(name, [name])
