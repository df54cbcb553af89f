"""Env-step budgets: refuse an unasked-for budget of days, and explain a run's overshoot.

A task's default budget is its published one (NetHack: 2 billion env steps). Leaving out
``--steps`` on such a task would start weeks of training without a word, so the command
line asks for an explicit value when the estimate below exceeds a day; ``--steps published``
runs the published budget knowingly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.registry import find_family
from llmexplore.errors import ConfigError
from llmexplore.number_input import MAX_STEPS, PUBLISHED, read_steps

DAY_SECONDS = 86_400
#: env steps/s assumed for a family that is not registered
DEFAULT_STEPS_PER_SECOND = 1_000


def reference_rate(task: TaskSpec, processes: int = 1) -> int:
    """Env steps/s of ``processes`` training processes on the reference machine (2 CPU cores), as
    measured for the task's family (``EnvFamily.reference_steps_per_second``)."""
    family = find_family(task.family)
    rate = family.reference_steps_per_second if family else DEFAULT_STEPS_PER_SECOND
    return rate * max(1, processes)


def estimated_seconds(task: TaskSpec, steps: int, processes: int = 1) -> float:
    """A rough wall time for ``steps`` env steps with ``processes`` rollout processes."""
    return steps / reference_rate(task, processes)


#: the rollout workers ``EnvFamily.gpu_machine_steps_per_second`` was measured with; fewer is not that measurement
GPU_MACHINE_WORKERS = 16


@dataclass(frozen=True)
class RateEstimate:
    """Env steps/s a run may expect, and which measurement says so (for messages)."""

    steps_per_second: float
    source: str


def training_rate(task: TaskSpec, network: str, device: str, num_workers: int) -> RateEstimate:
    """The env steps/s of a run with these settings: the 16-core GPU machine's measured figure where the run
    matches that measurement (its family and network, on a GPU, >= 16 workers), else the family's 2-core
    figure per rollout worker (the budget rule's estimate)."""
    family = find_family(task.family)
    on_gpu_machine = family.gpu_machine_steps_per_second if family else {}
    measured = on_gpu_machine.get(network) or on_gpu_machine.get("*")
    if measured and device == "gpu" and num_workers >= GPU_MACHINE_WORKERS:
        return RateEstimate(measured, f"{task.family}'s figure for a 16-core GPU machine (docs/GPU.md)")
    rate = reference_rate(task, num_workers)
    workers = f" x {num_workers} workers" if num_workers > 1 else ""
    return RateEstimate(rate, f"{task.family}'s 2-core figure{workers}")


#: how the budget is spelled where it is set: ``run``'s option, or a grid file's key
CLI_STEPS, GRID_STEPS = "--steps ", "steps: "


def _steps_field(value: Any) -> int | str | None:
    """``read_steps`` for pydantic models: a bad budget is that field's error, in our words."""
    try:
        return read_steps(value)
    except ValueError as exc:
        raise PydanticCustomError("steps", "{reason}", {"reason": str(exc)}) from None


#: a budget as written: env steps, or the task's published budget by name (``read_steps`` reads it)
Steps = Annotated[Union[Annotated[int, Field(gt=0, le=MAX_STEPS)], Literal["published"]],
                  BeforeValidator(_steps_field)]


def choose_steps(value: int | str | None, task: TaskSpec, processes: int = 1,
                 spelling: str = CLI_STEPS) -> int:
    """A run's env-step budget from a budget as a spec holds it (``Steps``, already read): a number as
    given, ``published`` the task's published budget, and nothing the published budget only when it takes
    under a day here. The one rule for ``run`` and grid files, applied where a run is resolved
    (``spelling`` names the setting in messages)."""
    if value is None:
        return default_budget_or_error(task, processes, spelling)
    return task.default_budget if value == PUBLISHED else int(value)


def default_budget_or_error(task: TaskSpec, processes: int = 1, spelling: str = CLI_STEPS) -> int:
    """The published budget when it fits in a day here; otherwise a ConfigError saying how to choose."""
    seconds = estimated_seconds(task, task.default_budget, processes)
    if seconds <= DAY_SECONDS:
        return task.default_budget
    rate = reference_rate(task, processes)
    raise ConfigError(
        f"no {spelling.strip(' :')} given: {task.name}'s published budget is {task.default_budget:,} "
        f"env steps, about "
        f"{seconds / DAY_SECONDS:,.0f} days at ~{rate:,} env steps/s on a 2-core machine",
        hint=f"set {spelling}N (e.g. {spelling}1000000, about {1_000_000 / rate / 60:,.0f} minutes), or "
             f"{spelling}{PUBLISHED} to run the published budget",
    )


def overshoot_note(budget: int, env_steps: int, batch_size: int) -> dict[str, object] | None:
    """How far training ran past the budget, and why; None when it stopped on the budget."""
    extra = env_steps - budget
    if extra <= 0:
        return None
    batches = extra / batch_size
    why = ("training stops at the end of the batch that reaches the budget (a batch is not cut short), so a run "
           f"ends up to one batch ({batch_size:,} env steps) past it")
    if batches > 1:
        why += (f"; here {batches:.1f} batches, as batches already sampled or in the learner when the budget was "
                "reached were trained on too")
    return {"env_steps": extra, "batch_size": batch_size,
            "why": why + ". Final metrics count only episodes that ended within the budget."}
