"""Rewrite validated code so that every unit of work passes through the sandbox's meter.

After ``validate`` has accepted a tree, ``instrument`` returns a new tree where

* each function body, loop body and call ticks the budget (calls go through ``_llmx_call``,
  which also checks at run time that the callee is allowed);
* each comprehension ticks per item, per condition and per inner iterable, so nested
  comprehensions are metered even when their inner loops are empty;
* ``+``, ``*``, ``**``, ``<<`` and ``%`` (and their augmented forms) go through helpers that
  refuse results over the size limits *before* computing them (``[0] * 10**10`` never
  allocates), and ``%`` refuses string formatting;
* each operand of a comparison (``==``, ``<``, ``in``, ...) and each container passed to a
  builtin or method is weighed first (sizing.py): comparing, hashing or formatting nested
  values runs in C over every nested item, so a heavy one is refused before it runs;
* annotations are dropped (never evaluated).

Helper names start with ``_llmx_``; user code can never name them (the validator refuses
names starting with an underscore).
"""

from __future__ import annotations

import ast
import copy

from llmexplore.methods.maestro.sandbox.rules import HELPER_PREFIX

_BINOP_HELPERS = {ast.Add: "add", ast.Mult: "mul", ast.Pow: "pow", ast.LShift: "lshift", ast.Mod: "mod"}


def helper(name: str) -> str:
    """Helper ``name``'s name in the namespace, prefixed ``_llmx_``: generated code cannot spell it."""
    return HELPER_PREFIX + name


def _call(name: str, *args: ast.expr, keywords: list[ast.keyword] | None = None) -> ast.Call:
    return ast.Call(func=ast.Name(id=helper(name), ctx=ast.Load()), args=list(args), keywords=keywords or [])


def _tick_stmt() -> ast.Expr:
    return ast.Expr(value=_call("tick"))


class _Instrumenter(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.returns = None
        for arg in node.args.args:
            arg.annotation = None
        node.body = [_tick_stmt()] + node.body
        return node

    def _loop(self, node: ast.For | ast.While) -> ast.AST:
        self.generic_visit(node)
        node.body = [_tick_stmt()] + node.body
        return node

    visit_For = _loop
    visit_While = _loop

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.Assign:
        self.generic_visit(node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = _BINOP_HELPERS.get(type(node.op))
        if name is None:
            return node
        return ast.copy_location(_call(name, node.left, node.right), node)

    def visit_Compare(self, node: ast.Compare) -> ast.Compare:
        self.generic_visit(node)
        node.left = _call("operand", node.left)
        node.comparators = [_call("operand", c) for c in node.comparators]
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        name = _BINOP_HELPERS.get(type(node.op))
        if name is None:
            return node
        current = copy.deepcopy(node.target)
        current.ctx = ast.Load()
        for sub in ast.walk(current):
            if hasattr(sub, "ctx"):
                sub.ctx = ast.Load()
        assign = ast.Assign(targets=[node.target], value=_call(name, current, node.value))
        return ast.copy_location(assign, node)

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        return ast.copy_location(_call("call", node.func, *node.args, keywords=node.keywords), node)

    def _comprehension(self, node: ast.AST) -> ast.AST:
        self.generic_visit(node)
        for gen in node.generators:  # type: ignore[attr-defined]
            gen.iter = _call("iter", gen.iter)
            gen.ifs = [_call("check", cond) for cond in gen.ifs]
        if isinstance(node, ast.DictComp):
            node.key = _call("item", node.key)
        else:
            node.elt = _call("item", node.elt)  # type: ignore[attr-defined]
        return node

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension


def instrument(tree: ast.Module) -> ast.Module:
    """A metered copy of a validated tree (the input is left as it was)."""
    out = _Instrumenter().visit(copy.deepcopy(tree))
    return ast.fix_missing_locations(out)
