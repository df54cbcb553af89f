"""A sandbox for LM-written Python: static validation, metered execution, clear reasons.

``validate`` (validator.py) refuses code off the allow-list (rules.py) with a reason;
``SandboxedCode`` (runtime.py) compiles accepted code after instrumentation (instrument.py)
and runs each call under a budget of steps, time and allocation.
"""

from llmexplore.methods.maestro.sandbox.rules import DEFAULT_LIMITS, Limits
from llmexplore.methods.maestro.sandbox.runtime import BudgetExceeded, CodeFailed, SandboxedCode
from llmexplore.methods.maestro.sandbox.validator import CodeRejected, FunctionSpec, ValidatedCode, validate

__all__ = ["BudgetExceeded", "CodeFailed", "CodeRejected", "DEFAULT_LIMITS", "FunctionSpec", "Limits",
           "SandboxedCode", "ValidatedCode", "validate"]
