"""Env-step budgets: refuse an unasked-for budget of days, and explain a run's overshoot.

A task's default budget is its published one (NetHack: 2 billion env steps). Leaving out
``--steps`` on such a task would start weeks of training without a word, so the command
line asks for an explicit value when the estimate below exceeds a day; ``--steps published``
runs the published budget knowingly.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from llmexplore.envs.base import TaskSpec
from llmexplore.envs.registry import find_family
from llmexplore.errors import ConfigError
from llmexplore.number_input import MAX_STEPS

PUBLISHED = "published"
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


#: how the budget is spelled where it is set: ``run``'s option, or a grid file's key
CLI_STEPS, GRID_STEPS = "--steps ", "steps: "


def choose_steps(value: str | int | None, task: TaskSpec, processes: int = 1,
                 spelling: str = CLI_STEPS) -> int:
    """A run's env-step budget: a number as given, ``published`` the task's published budget, and
    nothing the published budget only when it takes under a day here. The one rule for ``run`` and
    grid files (``spelling`` names the setting in messages)."""
    steps = parse_steps(value, task, spelling)
    return steps if steps is not None else default_budget_or_error(task, processes, spelling)


def steps_of(values: Mapping[str, Any], spelling: str = CLI_STEPS) -> Any:
    """``choose_steps`` for a run's raw settings (``task``, ``steps``, ``train.num_workers``), as ``run``
    and grid files give them; an unknown task leaves ``steps`` as it is, for the run spec's check to
    report with every other problem."""
    from llmexplore.envs import get_task

    try:
        task = get_task(str(values.get("task")))
    except ConfigError:
        return values.get("steps")
    train = values.get("train")
    workers = train.get("num_workers", 1) if isinstance(train, Mapping) else 1
    return choose_steps(values.get("steps"), task, workers if isinstance(workers, int) and workers > 0 else 1,
                        spelling)


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


def parse_steps(value: str | int | float | None, task: TaskSpec, spelling: str = CLI_STEPS) -> int | None:
    """``--steps``: a positive whole number up to ``MAX_STEPS`` (``1e6`` and ``1_000_000`` too) or ``published``;
    NaN, infinities and overflowing numbers are refused here, where the budget enters."""
    if value is None:
        return None
    if isinstance(value, bool):
        value = str(value)
    wanted = (f"{spelling.strip(' :')} must be a positive whole number of env steps up to {MAX_STEPS:.0e} or "
              f"'{PUBLISHED}'")
    if isinstance(value, int):
        number = float(value) if value <= MAX_STEPS else math.inf
    elif isinstance(value, float):
        number = value
    elif value.strip().lower() == PUBLISHED:
        return task.default_budget
    else:
        try:
            number = float(value.replace("_", "").replace(",", ""))
        except ValueError:
            number = math.nan
    if not math.isfinite(number) or number < 1 or number > MAX_STEPS or number != int(number):
        raise ConfigError(f"{wanted}, not {value!r}", hint=f"e.g. {spelling}1000000")
    return int(number)


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
