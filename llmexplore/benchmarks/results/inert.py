"""Runs whose method ran but contributed nothing: reported as inert, never ranked.

An ONI run whose LM never labelled a caption as worth a bonus, or a method whose reward stayed zero for
any other reason, trained on the task's reward alone: it is a run of the baseline under the method's
name, and ranking it would credit the method with the baseline's result (on results/minihack, five
oni-retrieval runs per task score exactly as `none`). What a record holds decides it: the run's own check
over every step (``record.inert``, benchmarks/run/inert.py: the smallest and largest intrinsic reward of
every stretch were one value) where the run made it, else, for records written before that check, its
learning curve's intrinsic return per episode, at every point, and the final one.
"""

from __future__ import annotations

from llmexplore.benchmarks.results.aggregate import Run
from llmexplore.benchmarks.run.record import RunRecord

#: the rule, said under the table of inert runs
INERT_RULE = ("Inert: a run of a method other than none, with c_int above 0, whose intrinsic reward had one value "
              "on every step (the run's own check), or, in records made before that check, whose intrinsic return "
              "per episode has one value (e.g. 0) at every point of its learning curve (two or more) and at the "
              "end: the method gave no bonus that varied, so the run trained as the baseline would. Inert runs "
              "are not ranked: they are left out of the per-task tables, P(X > Y), the profiles and the aggregate.")


def inert_reason(record: RunRecord) -> str | None:
    """Why the record is inert (INERT_RULE), or None when its method contributed a varying signal, when it is
    the baseline or has c_int 0 by choice, or when its record holds no intrinsic return to judge by."""
    spec = record.spec
    if spec.method == "none" or (spec.int_coef is not None and spec.int_coef <= 0):
        return None
    if record.inert is not None:
        return f"intrinsic reward {record.inert['constant_reward']:g} on every step (the run's own check)"
    if "reward_int_min" in record.method_metrics:  # the run checked every step, and its reward varied
        return None
    values = [p.intrinsic_return for p in record.curve if p.intrinsic_return is not None]
    final = record.final_metrics.get("intrinsic_return")
    if len(values) < 2 or final is None or any(v != values[0] for v in values) or float(final) != values[0]:
        return None
    coef = "its default c_int" if spec.int_coef is None else f"c_int {spec.int_coef:g}"
    return f"intrinsic return {values[0]:g} at all {len(values)} curve points and at the end, with {coef}"


def split_inert(runs: list[Run]) -> tuple[list[Run], list[tuple[Run, str]]]:
    """The runs to rank, and the inert ones with why."""
    ranked, inert = [], []
    for run in runs:
        reason = inert_reason(run.record)
        if reason is None:
            ranked.append(run)
        else:
            inert.append((run, reason))
    return ranked, inert
