"""The grid file's own keys: top level, blocks, ``suite`` and its parts, as pydantic models and key sets.

Kept apart from the expansion (``grid_file.py``) so that one place says what a grid file accepts:
validation reads these, and ``docs/GRIDS.md`` is checked against ``grid_file_keys`` (a test), so the
reference cannot drift from the code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmexplore.benchmarks.grids.backend_options import BACKEND_SECTIONS
from llmexplore.benchmarks.run.budget import Steps

TOP_KEYS = {"name", "description", "suite", "defaults", "blocks", "set", "vary", "tied", "lm", "output",
            *BACKEND_SECTIONS}
BLOCK_KEYS = {"set", "vary", "tied", "name"}
Protocol = Literal["reward-free", "with-reward", "pretrain-finetune"]
#: ``suite.finetune.method`` value that keeps each pretraining cell's method
PARENT_METHOD = "parent"
#: the most cells one grid file may expand to: each is checked before anything runs (about a millisecond
#: each), and a grid past this is almost always a typo in a ``vary`` list
MAX_CELLS = 10_000


class Resources(BaseModel):
    """What one cell needs; backends that schedule (Ray, SLURM) honour it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    cpus: int = Field(1, ge=1, description="CPU cores one cell asks for (>= 1)")
    gpus: float = Field(
        0, ge=0, description="GPUs one cell asks for (>= 0; a fraction shares a GPU under Ray)")
    memory_gb: float = Field(4, gt=0, description="memory one cell asks for, in GB (> 0)")
    time_minutes: int = Field(60, ge=1, description="wall-clock limit per cell (SLURM)")


class Finetune(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    task: str = Field(description="task the fine-tuning cells train on")
    steps: Steps | None = Field(
        None, description="the fine-tuning budget; default: the parent's; 'published': the task's own")
    method: str = Field("none", description="fine-tuning method; 'parent': each cell keeps its pretraining method "
                                            "(and options), so a policy keeps the inputs that method adds")
    reset: list[str] = Field(
        default_factory=list, description="parts of the parent's policy to re-initialise (encoder, core, "
                                          "decoder, critic, action_head)")
    ext_coef: float | None = Field(
        None, ge=0, description="c_ext of the fine-tuning cells (>= 0); default: the task's published value")
    int_coef: float | None = Field(None, ge=0, description="c_int of the fine-tuning method (default: its own)")
    method_options: dict[str, Any] | None = Field(
        None, description="options of the fine-tuning method; default: the parent's when the method is the same")


class Suite(BaseModel):
    """A benchmark protocol: which tasks, what budget, how runs relate."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(None, description="name of the suite, for readers of the grid file")
    protocol: Protocol = Field(
        "with-reward", description="reward-free (ext_coef forced to 0), with-reward, or pretrain-finetune "
                                   "(reward-free, then a fine-tuning cell per cell)")
    tasks: list[str] = Field(
        default_factory=list, description="tasks each cell runs on when the grid's cells name none")
    steps: Steps | None = Field(
        None, description="every cell's budget unless it sets its own (budget.choose_steps: a missing one is "
                                "the published budget only where that takes under a day here)")
    metrics: list[str] = Field(default_factory=list, description="leaderboard columns beyond each task's metric")
    finetune: Finetune | None = Field(
        None, description="the fine-tuning stage of the pretrain-finetune protocol")
    resources: Resources = Field(
        default_factory=Resources, description="what each cell asks of a scheduler (Ray, SLURM)")



#: sections whose keys are another model's, listed by a command rather than by the grid reference
DELEGATED = {"train": "llmexplore options", "lm": "llmexplore options", "method_options": "llmexplore methods NAME"}


def grid_file_keys() -> dict[str, list[str]]:
    """Every key a grid file accepts, by where it goes (``docs/GRIDS.md`` has a heading per section). A cell's
    keys (``defaults``, ``set``, ``vary``, ``tied``) are the run spec's; ``train``, ``lm`` and
    ``method_options`` take the keys ``DELEGATED`` names the listing command of."""
    from llmexplore.agents.resolved_run import ParentSpec
    from llmexplore.benchmarks.run.spec import RunSpec

    sections = {"top level": TOP_KEYS, "blocks": BLOCK_KEYS, "cell": set(RunSpec.model_fields),
                "parent": set(ParentSpec.model_fields), "suite": set(Suite.model_fields),
                "suite.resources": set(Resources.model_fields), "suite.finetune": set(Finetune.model_fields)}
    sections.update({name: set(model.model_fields) for name, model in BACKEND_SECTIONS.items()})
    return {name: sorted(keys) for name, keys in sections.items()}
