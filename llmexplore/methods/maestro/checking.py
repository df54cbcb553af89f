"""Checking generated code before anyone relies on it: static validation, then a smoke run.

``check_code`` validates the source (``sandbox.validate``), compiles it, and calls each
required function on every probe state of ``interface.probe_observations``: a function that
fails, runs out of budget or returns the wrong kind of value on a plausible state is refused
with the reason, exactly like code the validator refuses. Infinite loops and huge
allocations are caught here (the static checks catch only the obvious ones).
"""

from __future__ import annotations

from typing import Any, Sequence

from llmexplore.methods.maestro.interface import probe_observations
from llmexplore.methods.maestro.sandbox import (DEFAULT_LIMITS, CodeFailed, CodeRejected, FunctionSpec,
                                                Limits, SandboxedCode)
from llmexplore.methods.maestro.sandbox import isolation
from llmexplore.methods.maestro.sandbox.sizing import bounded_repr


#: the skills offered to a policy on a probe state that names none
_PROBE_AVAILABLE = ("discoverer", "descender", "ascender")


def check_result(spec: FunctionSpec, value: Any, obs: dict[str, Any]) -> Any:
    """The function's return value in canonical form, or CodeRejected saying what is wrong with it."""
    if spec.returns == "bool":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return bool(value)
        raise CodeRejected(f"'{spec.name}' returned {bounded_repr(value)}; it must return True or False")
    if spec.returns == "skill":
        if not isinstance(value, str) or value not in obs["available"]:
            raise CodeRejected(f"'{spec.name}' returned {bounded_repr(value)}, which is not one of "
                               f"obs['available'] {tuple(obs['available'])}")
        return value
    raise ValueError(f"unknown return kind {spec.returns!r}")


def probe_inputs(spec: FunctionSpec) -> list[tuple[Any, ...]]:
    """Argument tuples to smoke-run ``spec``'s function on every probe state;
    a policy's states get a non-empty ``available`` and an empty memory."""
    out = []
    for obs in probe_observations():
        if spec.returns == "skill":
            available = tuple(obs["available"]) or _PROBE_AVAILABLE
            out.append((dict(obs, available=available), {}))
        else:
            out.append((obs,))
    return out


def check_code(source: str, specs: Sequence[FunctionSpec], limits: Limits = DEFAULT_LIMITS,
               name: str = "<generated>", isolate: bool = True) -> SandboxedCode:
    """Validated, compiled code whose functions behave on every probe state; else CodeRejected.

    With ``isolate`` (the default, where the OS allows it) the probe runs happen in a forked child
    under OS limits (isolation.py), an outer guard on top of the meter: whatever the meter misses
    ends as a refusal, never as a hang or a crash of this process.
    """
    try:
        code = SandboxedCode(source, tuple(specs), limits, name=name)  # raises CodeRejected; runs nothing
    except RecursionError:  # the static checks walk the syntax tree recursively
        raise CodeRejected("the code nests expressions too deeply to check; write it with fewer nested "
                           "operators (intermediate variables)") from None
    inputs = {spec.name: probe_inputs(spec) for spec in specs}  # built here: the child only runs code
    if isolate and isolation.AVAILABLE:
        try:
            reason = isolation.run_isolated(lambda: _probe_failure(code, specs, inputs))
        except isolation.IsolatedFailure as exc:
            reason = f"the probe runs were stopped by the outer guard: {exc}"
    else:
        reason = _probe_failure(code, specs, inputs)
    if reason is not None:
        raise CodeRejected(reason)
    return code


def _probe_failure(code: SandboxedCode, specs: Sequence[FunctionSpec],
                   inputs: dict[str, list[tuple[Any, ...]]]) -> str | None:
    """Why the code misbehaves on a probe state, or None when every probe run is fine."""
    try:
        for spec in specs:
            memory: dict[str, Any] = {}
            for args in inputs[spec.name]:
                if spec.returns == "skill":
                    args = (args[0], memory)  # one memory across the probes, as within an episode
                try:
                    value = code.call(spec.name, *args)
                except CodeFailed as exc:
                    return f"'{spec.name}' failed on a probe state ({_summary(args[0])}): {exc.reason}"
                check_result(spec, value, args[0])  # the code saw a copy: args[0] is as built here
    except CodeRejected as exc:
        return exc.reason
    return None


def _summary(obs: dict[str, Any]) -> str:
    """The probe state, in words, capped."""
    fields = {k: bounded_repr(obs.get(k), 80) for k in ("depth", "branch", "skill", "message")}
    return (f"depth {fields['depth']}, branch {fields['branch'].strip(chr(39))}, skill {fields['skill']}, "
            f"message {fields['message']}")
