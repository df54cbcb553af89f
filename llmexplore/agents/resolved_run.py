"""The resolved run: one (method, task, seed, budget) cell, every default filled in and every name checked.

``benchmarks/run/spec.py`` makes it once from a run spec (``resolve``): a grid when it checks its grid file,
``llmexplore run`` for a run started by hand. It is written to the run folder (``resolved.json``; by the grid
before the cell starts) and from then on read as is: by the cell, by every sample-factory process
(``cfg.llmexplore`` carries it, ``run_settings.py``) and by the method (``MethodContext``). Nothing
downstream fills in a default again, so what the folder says is what ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmexplore.agents.checkpoints import POLICY_PARTS
from llmexplore.agents.train_config import TrainConfig
from llmexplore.atomic import atomic_write_text
from llmexplore.errors import ConfigError
from llmexplore.lm.config import LMConfig

#: the resolved run's file in a run folder (beside the grid's ``spec.yaml``, when a grid wrote one)
RESOLVED_FILE = "resolved.json"
#: fields that describe the run as a user wrote it (a run spec's fields); the rest are what the engine adds
SPEC_FIELDS = ("method", "task", "seed", "steps", "ext_coef", "int_coef", "method_options", "train", "lm",
               "parent", "label")


class ParentSpec(BaseModel):
    """Fine-tuning: start from another run's policy (fresh optimizer)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    run_dir: str = Field(
        description="run directory of the parent run whose policy weights this run starts from")
    checkpoint: str | None = Field(None, description="a checkpoint file; default: the parent's latest")
    reset: list[str] = Field(default_factory=list,
                             description=f"parts to re-initialise: {sorted(POLICY_PARTS)}")


class ResolvedRun(BaseModel):
    """A run spec's fields, each with its final value, plus the network the engine builds for it."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    method: str = Field(description="exploration method name (`llmexplore methods`)")
    task: str = Field(description="task name (`llmexplore envs`)")
    seed: int = Field(description="run seed, 0 to 1,000,000")
    steps: int = Field(description="the env-step budget")
    ext_coef: float = Field(
        description="c_ext, the weight of the env's reward in the reward PPO trains on (>= 0)")
    int_coef: float = Field(
        description="c_int, the weight of the method's intrinsic reward in the reward PPO trains on (>= 0)")
    method_options: dict[str, Any] = Field(description="every option of the method, defaults included")
    train: TrainConfig = Field(description="resolved: the family's defaults and the preset filled in; the torch "
                                           "threads and an 'auto' device are settled on the machine that trains "
                                           "(a grid leaves them open: benchmarks/run/spec.py settle_here)")
    lm: LMConfig = Field(description="the language model the method asks, every setting filled in")
    parent: ParentSpec | None = Field(None, description="with the parent checkpoint chosen")
    label: str = Field(description="row name in tables; the method name when the spec gave none")
    encoder: str = Field(description="the policy network's encoder (agents/encoders.py)")
    policy_keys: tuple[str, ...] = Field(description="observation keys the method adds for the policy")

    # -- what the engine reads ---------------------------------------------------------------------
    @property
    def budget(self) -> int:
        """Env steps the run trains for: the task's published budget unless the spec set its own."""
        return self.steps

    @property
    def device(self) -> str:
        """The torch device of training: ``cuda`` or ``cpu``."""
        return "cuda" if self.train.device == "gpu" else "cpu"

    @property
    def init_checkpoint(self) -> str | None:
        """The checkpoint file a fine-tuning run starts from; None for a run from scratch, or while a grid has
        not chosen its parent's checkpoint yet (``with_parent_checkpoint``)."""
        return self.parent.checkpoint if self.parent else None

    @property
    def reset_parts(self) -> tuple[str, ...]:
        """Policy parts (``POLICY_PARTS``) re-initialised after loading the parent; empty without one."""
        return tuple(self.parent.reset) if self.parent else ()

    def spec_dict(self) -> dict[str, Any]:
        """The run spec's fields with their final values: the record's ``spec`` (a resumption matches it)."""
        return self.model_dump(mode="json", include=set(SPEC_FIELDS))

    # -- the run folder ------------------------------------------------------------------------------
    def write(self, run_dir: str | Path) -> Path:
        """Write ``resolved.json`` into the run folder, atomically; returns its path. From then on the run is
        read as it is, never resolved again."""
        path = Path(run_dir) / RESOLVED_FILE
        atomic_write_text(path, self.model_dump_json(indent=2) + "\n")
        return path

    @classmethod
    def read(cls, run_dir: str | Path) -> "ResolvedRun | None":
        """The run folder's resolved run; None when it has none (a new folder, or one of an older version)."""
        path = Path(run_dir) / RESOLVED_FILE
        if not path.is_file():
            return None
        try:
            return cls.model_validate(json.loads(path.read_text()))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise ConfigError(f"{path} is not a resolved run written by llmexplore: {exc}",
                              hint="delete it: rerunning the cell's command resolves its spec again",
                              ) from None
