"""What generated code may contain and how much it may do: one place for every limit.

The sandbox is an allow-list, not a block-list: a node type, name, method or builtin that
is not listed here is refused. Limits bound each call of a generated function in work
(ticks: loop iterations, comprehension items, function entries and calls), wall time and
allocation (items produced by operations that build strings, lists, ranges or big ints).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds on generated code. Defaults leave room for any sensible predicate or policy
    (the reference functions use well under 1% of them) and stop runaway code in milliseconds."""

    #: characters of source text
    max_source_chars: int = 20_000
    #: AST nodes in the whole source
    max_nodes: int = 4_000
    #: ticks per call (a tick: one loop iteration, comprehension item, function entry or call)
    max_ticks: int = 20_000
    #: wall-clock seconds per call (checked every few ticks)
    time_limit_s: float = 0.05
    #: items (characters, elements) one operation may produce
    max_items: int = 100_000
    #: items all operations of one call may produce together
    max_alloc: int = 1_000_000
    #: bits of an integer produced by *, ** or <<
    max_int_bits: int = 4_096
    #: entries a policy's memory may hold between calls, counting nested items
    max_memory_items: int = 2_000


DEFAULT_LIMITS = Limits()

#: statement and expression nodes generated code may use
ALLOWED_NODES: frozenset[type] = frozenset({
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign,
    ast.If, ast.For, ast.While, ast.Break, ast.Continue, ast.Pass, ast.Expr,
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.keyword, ast.IfExp, ast.Attribute,
    ast.Constant, ast.Name, ast.Load, ast.Store, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.Set,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension,
    ast.And, ast.Or, ast.Not, ast.Invert, ast.UAdd, ast.USub,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
    ast.BitOr, ast.BitAnd, ast.BitXor,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
})

#: why a known but refused node is refused (anything else unlisted: "<Node> is not allowed")
REFUSED_NODES: dict[type, str] = {
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.ClassDef: "class definitions are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "generators (yield) are not allowed",
    ast.YieldFrom: "generators (yield from) are not allowed",
    ast.Global: "global is not allowed",
    ast.Nonlocal: "nonlocal is not allowed",
    ast.Try: "try/except is not allowed",
    ast.Raise: "raise is not allowed",
    ast.Assert: "assert is not allowed",
    ast.With: "with is not allowed",
    ast.AsyncWith: "with is not allowed",
    ast.AsyncFor: "async for is not allowed",
    ast.Delete: "del is not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.FormattedValue: "f-strings are not allowed",
    ast.Starred: "star-unpacking is not allowed",
    ast.NamedExpr: "assignment expressions (:=) are not allowed",
    ast.MatMult: "the @ operator is not allowed",
    ast.Match: "match statements are not allowed",
}
if hasattr(ast, "TryStar"):
    REFUSED_NODES[ast.TryStar] = "try/except is not allowed"

#: builtins generated code may call or name; some are replaced by checked versions at run time
ALLOWED_BUILTINS: frozenset[str] = frozenset({
    "abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "isinstance", "len", "list", "max",
    "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip",
    "True", "False", "None",
})

#: methods of str, dict, list, set and tuple values that cannot blow up time or memory
ALLOWED_METHODS: frozenset[str] = frozenset({
    # str
    "lower", "upper", "strip", "startswith", "endswith", "split", "count", "find", "isdigit", "isalpha",
    # dict
    "get", "keys", "values", "items",
    # list, set, tuple
    "append", "add", "index",
})
#: the types whose methods those are
METHOD_OWNERS: tuple[type, ...] = (str, dict, list, set, tuple)

#: prefix of the helper names the instrumentation adds (user names may not start with "_")
HELPER_PREFIX = "_llmx_"
