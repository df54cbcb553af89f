"""Running instrumented code: the meter, the checked builtins and the per-call budget.

``SandboxedCode`` compiles a validated, instrumented module in a namespace whose only
builtins are the allowed ones (some replaced by checked versions), then calls its functions
under a fresh ``Budget`` each time. A call that runs out of ticks, time or allocation, or
fails in any other way, raises ``CodeFailed`` with the reason; nothing the code does can
catch that (try/except is refused by the validator). Arguments go in as plain copies and a
function's own state comes back only as a checked copy (boundary.py): nothing generated code
does reaches the caller's objects.
"""

from __future__ import annotations

import builtins
import math
import time
from typing import Any, Callable, Iterable

from llmexplore.errors import UserError
from llmexplore.methods.maestro.sandbox.boundary import NotPlain, plain_copy
from llmexplore.methods.maestro.sandbox.instrument import helper, instrument
from llmexplore.methods.maestro.sandbox.rules import (ALLOWED_BUILTINS, ALLOWED_METHODS, DEFAULT_LIMITS,
                                                      METHOD_OWNERS, Limits)
from llmexplore.methods.maestro.sandbox.sizing import (TooHeavy, bounded_repr, describe_exception,
                                                       is_container, weight)
from llmexplore.methods.maestro.sandbox.validator import FunctionSpec, ValidatedCode, validate

_TIME_CHECK_EVERY = 32
#: a walk of more items than this is a heavy step: the clock is checked after it, not 32 ticks later
_HEAVY_WALK = 1_000
#: builtins whose work does not depend on how deep their arguments are (no walk before calling them)
_SHALLOW = frozenset({"len", "isinstance", "bool", "abs", "enumerate", "zip", "reversed", "range", "append"})
#: methods that compare their argument with every item of their owner
_SCANNING = frozenset({"index", "count"})


class BudgetExceeded(Exception):
    """Raised inside generated code when a call uses up its budget."""


class CodeFailed(UserError):
    """A call of generated code failed at run time (budget, type error, bad return value, ...)."""

    def __init__(self, function: str, reason: str):
        self.function = function
        self.reason = reason
        super().__init__(f"generated function '{function}' failed: {reason}")


class Budget:
    """Ticks, a deadline and an allocation count for one call."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.reset()

    def reset(self) -> None:
        """Start a call: no ticks, no allocations, a deadline ``time_limit_s`` from now."""
        self.ticks = 0
        self.alloc = 0
        self.deadline = time.perf_counter() + self.limits.time_limit_s

    def tick(self) -> None:
        """Count one step; BudgetExceeded past ``max_ticks``, or
        past the deadline (the clock is read every 32 ticks)."""
        self.ticks += 1
        if self.ticks > self.limits.max_ticks:
            raise BudgetExceeded(f"more than {self.limits.max_ticks} steps (loop iterations, items or calls)")
        if self.ticks % _TIME_CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise BudgetExceeded(f"more than {self.limits.time_limit_s * 1000:.0f} ms")

    def check_weight(self, value: Any, what: str, chars: bool = False) -> None:
        """Refuse a value whose nested items would make one C-level operation too long."""
        try:
            walked = weight(value, self.limits.max_items, chars=chars)
        except TooHeavy as exc:
            raise BudgetExceeded(f"{what} of more than {exc.cap} items (nested items counted)") from None
        if walked > _HEAVY_WALK and time.perf_counter() > self.deadline:  # heavy steps: check the clock now
            raise BudgetExceeded(f"more than {self.limits.time_limit_s * 1000:.0f} ms")

    def allocate(self, items: int) -> None:
        """Count ``items`` new items; BudgetExceeded for one value
        over ``max_items`` or a call's total over ``max_alloc``."""
        if items > self.limits.max_items:
            raise BudgetExceeded(f"a value of {items} items (the limit is {self.limits.max_items})")
        self.alloc += items
        if self.alloc > self.limits.max_alloc:
            raise BudgetExceeded(f"more than {self.limits.max_alloc} items allocated in one call")


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, range)) else 1


def _int_bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) and not isinstance(value, bool) else 0


class _Helpers:
    """The functions the instrumentation calls, bound to one namespace and one budget."""

    def __init__(self, budget: Budget, namespace: dict[str, Any]):
        self.budget = budget
        self.namespace = namespace
        self.safe_builtins: set[int] = set()

    # metering ----------------------------------------------------------------------------------
    def tick(self) -> None:
        self.budget.tick()

    def iter(self, iterable: Any) -> Any:
        self.budget.tick()
        return iterable

    def check(self, condition: Any) -> Any:
        self.budget.tick()
        return condition

    def item(self, value: Any) -> Any:
        self.budget.tick()
        self.budget.allocate(1)
        return value

    # sized operators -----------------------------------------------------------------------------
    def operand(self, value: Any) -> Any:
        """A comparison's operand: comparing containers walks every nested item in C."""
        if is_container(value):
            self.budget.check_weight(value, "a comparison")
        return value

    def add(self, a: Any, b: Any) -> Any:
        if isinstance(a, (str, list, tuple)) and isinstance(b, (str, list, tuple)):
            self.budget.allocate(len(a) + len(b))
        elif isinstance(a, int) and isinstance(b, int):
            self._bits(max(_int_bits(a), _int_bits(b)) + 1)
        return a + b

    def mul(self, a: Any, b: Any) -> Any:
        seq, count = (a, b) if isinstance(a, (str, list, tuple)) else (b, a)
        if isinstance(seq, (str, list, tuple)) and isinstance(count, int):
            self.budget.allocate(len(seq) * max(count, 0))
        elif isinstance(a, int) and isinstance(b, int):
            self._bits(_int_bits(a) + _int_bits(b))
        return a * b

    def pow(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
            self._bits(int(b * math.log2(abs(a))) + 1)
        return a ** b

    def lshift(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and b > 0:
            self._bits(_int_bits(a) + b)
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, (str, bytes)):
            raise BudgetExceeded("string formatting with % is not allowed")
        return a % b

    def _bits(self, bits: int) -> None:
        if bits > self.budget.limits.max_int_bits:
            limit = self.budget.limits.max_int_bits
            raise BudgetExceeded(f"an integer of about {bits} bits (the limit is {limit})")

    # calls ------------------------------------------------------------------------------------------
    def call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        self.budget.tick()
        if not self._allowed(func):
            raise BudgetExceeded(f"calling {bounded_repr(func, 80)} is not allowed")
        if getattr(func, "__globals__", None) is not self.namespace:
            self._check_arguments(func, args, kwargs)
        result = func(*args, **kwargs)
        if isinstance(result, (str, list, tuple, dict, set)):
            self.budget.allocate(len(result))
        return result

    def _check_arguments(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Before a builtin or method runs in C: no argument may be too heavy to walk, hash or compare."""
        name = getattr(func, "__name__", "")
        if name in _SHALLOW:
            return
        what = f"{name}() of a value"
        owner = getattr(func, "__self__", None)
        if name in _SCANNING and is_container(owner):
            self.budget.check_weight(owner, what)
        for value in args:
            if is_container(value):
                self.budget.check_weight(value, what)
        for value in kwargs.values():
            if is_container(value):
                self.budget.check_weight(value, what)

    def _allowed(self, func: Any) -> bool:
        if id(func) in self.safe_builtins:
            return True
        if getattr(func, "__globals__", None) is self.namespace:  # a function of the generated code
            return True
        owner = getattr(func, "__self__", None)
        return (type(func).__name__ == "builtin_function_or_method" and isinstance(owner, METHOD_OWNERS)
                and getattr(func, "__name__", "") in ALLOWED_METHODS)


def _checked_builtins(budget: Budget) -> dict[str, Any]:
    """The allowed builtins; those that could build big values check sizes first."""
    limits = budget.limits

    def checked_range(*args: int) -> range:
        r = range(*args)
        budget.allocate(len(r))
        return r

    def checked_sum(values: Iterable[Any], start: Any = 0) -> Any:
        if not isinstance(start, (int, float)):
            raise BudgetExceeded("sum() only adds numbers")
        return sum(values, start)

    def checked_str(value: Any = "") -> str:
        if _size(value) > limits.max_items:
            raise BudgetExceeded(f"str() of {_size(value)} items (the limit is {limits.max_items})")
        budget.check_weight(value, "str() of a value", chars=True)
        return str(value)

    def checked_round(number: Any, ndigits: Any = None) -> Any:
        if isinstance(ndigits, int) and ndigits < 0 and isinstance(number, int):
            bits = int(-ndigits * math.log2(10)) + 1  # rounding an int to 10**-ndigits builds that power
            if bits > limits.max_int_bits:
                raise BudgetExceeded(f"round() to 10**{-ndigits}: an integer of about {bits} bits "
                                     f"(the limit is {limits.max_int_bits})")
        return round(number, ndigits)

    out: dict[str, Any] = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS}
    out["range"] = checked_range
    out["sum"] = checked_sum
    for fn in (checked_range, checked_sum, checked_str, checked_round):
        fn.__name__ = fn.__name__.removeprefix("checked_")
    out["str"] = checked_str
    out["round"] = checked_round
    for name in ("sorted", "list", "tuple", "set", "dict", "reversed", "enumerate", "zip"):
        out[name] = _sized(getattr(builtins, name), limits)
    real_types = {id(out[name]): getattr(builtins, name) for name in ("list", "tuple", "set", "dict", "str")}
    out["isinstance"] = _checked_isinstance(real_types)
    return out


def _sized(fn: Callable[..., Any], limits: Limits) -> Callable[..., Any]:
    """``fn`` refusing arguments of more than ``limits.max_items`` items."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for arg in args:
            if _size(arg) > limits.max_items:
                raise BudgetExceeded(f"{fn.__name__}() of {_size(arg)} items "
                                     f"(the limit is {limits.max_items})")
        return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    return wrapper


def _checked_isinstance(real_types: dict[int, type]) -> Callable[[Any, Any], bool]:
    """isinstance with the checked constructors standing for the types they build (dict -> dict);
    ``real_types``: the constructor's id -> the type."""
    def checked_isinstance(value: Any, kinds: Any) -> bool:
        if isinstance(kinds, tuple):
            if len(kinds) > 16:
                raise BudgetExceeded("isinstance() with more than 16 types")
            kinds = tuple(real_types.get(id(k), k) for k in kinds)
        else:
            kinds = real_types.get(id(kinds), kinds)
        return isinstance(value, kinds)

    checked_isinstance.__name__ = "isinstance"
    return checked_isinstance


class SandboxedCode:
    """Validated generated code, compiled in its own namespace, callable under a budget."""

    def __init__(self, source: str | ValidatedCode, required: tuple[FunctionSpec, ...] = (),
                 limits: Limits = DEFAULT_LIMITS, name: str = "<generated>"):
        self.validated = source if isinstance(source, ValidatedCode) else validate(source, required, limits)
        self.limits = limits
        self.name = name
        self.budget = Budget(limits)
        self.namespace: dict[str, Any] = {}
        self._helpers = _Helpers(self.budget, self.namespace)
        safe = _checked_builtins(self.budget)
        self._helpers.safe_builtins = {id(v) for k, v in safe.items() if callable(v)}
        self.namespace.update(safe)
        self.namespace["__builtins__"] = {}
        for attr in ("tick", "iter", "check", "item", "operand", "add", "mul", "pow", "lshift", "mod",
                     "call"):
            self.namespace[helper(attr)] = getattr(self._helpers, attr)
        code = compile(instrument(self.validated.tree), name, "exec")
        self.budget.reset()
        try:
            exec(code, self.namespace)  # defines the functions and constants; runs nothing else
        except BudgetExceeded as exc:
            raise CodeFailed("<module>", str(exc)) from None
        self.functions = {n: self.namespace[n] for n in self.validated.functions}
        self.specs = {spec.name: spec for spec in required}

    def call(self, function: str, *args: Any) -> Any:
        """Call one generated function with a fresh budget; raises ``CodeFailed`` on any failure.

        The function sees copies of ``args``. A parameter its spec names as state (``memory``) is
        written back into the caller's dict only after a call that succeeded, and only as plain
        data within ``Limits.max_memory_items``; state that breaks that is cleared and the call fails.
        """
        fn = self.functions.get(function)
        if fn is None:
            raise CodeFailed(function, "no such function in the generated code")
        try:
            inputs = [plain_copy(arg, self.limits.max_alloc) for arg in args]
        except NotPlain as exc:  # the host's own values: a bug here, not in the generated code
            raise TypeError(f"arguments of generated code must be plain data: {exc}") from None
        value = self._run(fn, function, inputs)
        spec = self.specs.get(function)
        for index, name in enumerate(spec.params if spec is not None else ()):
            if name in spec.state and index < len(args) and isinstance(args[index], dict):
                self._take_back_state(function, name, args[index], inputs[index])
        return value

    def _take_back_state(self, function: str, name: str, host: dict[str, Any], changed: Any) -> None:
        limit = self.limits.max_memory_items
        try:
            checked = plain_copy(changed, limit)
        except NotPlain as exc:
            host.clear()
            raise CodeFailed(function, f"its {name} cannot be kept ({exc}; the limit is {limit} items); "
                                       "cleared") from None
        host.clear()
        host.update(checked)

    def _run(self, fn: Callable[..., Any], function: str, inputs: list[Any]) -> Any:
        self.budget.reset()
        try:
            return fn(*inputs)
        except BudgetExceeded as exc:
            raise CodeFailed(function, f"used its budget: {exc}") from None
        except RecursionError:
            raise CodeFailed(function, "recursion too deep") from None
        except MemoryError:
            raise CodeFailed(function, "out of memory") from None
        except Exception as exc:  # any error of generated code is its own failure, reported with the reason
            raise CodeFailed(function, describe_exception(exc)) from None
