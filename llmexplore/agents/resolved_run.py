"""The resolved run: one (method, task, seed, budget) cell, every default filled in and every name checked.

``benchmarks/run/spec.py`` makes it once from a run spec (``resolve``): a grid when it checks its grid file,
``llmexplore run`` for a run started by hand. It is written to the run folder (``resolved.json``; by the grid
before the cell starts) and from then on read as is: by the cell, by every sample-factory process
(``cfg.llmexplore`` carries it, ``run_settings.py``) and by the method (``MethodContext``). Nothing
downstream fills in a default again, so what the folder says is what ran.

``resolved.json`` carries a digest of its values: a file edited by hand, or a flipped bit, would otherwise
train as another run (another seed or budget) and rewrite the folder's record. ``write`` adds it and
``read`` checks it, the one place that does; a file of a version before digests is read without one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmexplore.agents.checkpoints import POLICY_PARTS
from llmexplore.agents.train_config import PER_ENV, TrainConfig
from llmexplore.atomic import atomic_write_text
from llmexplore.errors import ConfigError
from llmexplore.lm.config import LMConfig

#: the resolved run's file in a run folder (beside the grid's ``spec.yaml``, when a grid wrote one)
RESOLVED_FILE = "resolved.json"
#: fields that describe the run as a user wrote it (a run spec's fields); the rest are what the engine adds
SPEC_FIELDS = ("method", "task", "seed", "steps", "ext_coef", "int_coef", "method_options", "train", "lm",
               "parent", "label")
#: fields that may change between a run and its resumption without making it another run
OPERATIONAL = {("train", "save_every_sec"), ("train", "device"), ("train", "num_workers"), ("train", "serial"),
               ("train", "torch_threads"), ("train", "update_thread"), ("train", "metrics_every_steps"),
               ("train", "wandb")}
#: fields left out of a run's identity (``ResolvedRun.identity``): the operational ones, and the budget, since
#: a finished run extended to a larger budget resumes from the checkpoints it has
NOT_IDENTITY = OPERATIONAL | {("steps",)}
#: key of the digest of the other values in ``resolved.json``
DIGEST_KEY = "digest"


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
    encoder: str = Field(description="the policy network's encoder (networks/encoders.py)")
    policy_keys: tuple[str, ...] = Field(description="observation keys the method adds for the policy")

    @model_validator(mode="before")
    @classmethod
    def _defaults_of_options_added_later(cls, data: Any) -> Any:
        """A run resolved before ``train.reward_streams`` existed trained one stream, and one resolved before
        ``train.sampling`` existed ran per-env: an older file reads so, and resumes so (a resolved run always
        names both: ``spec.resolve`` chooses them)."""
        train = data.get("train") if isinstance(data, dict) else None
        if isinstance(train, dict):
            if train.get("reward_streams") is None:
                train = {**train, "reward_streams": 1}
            if "sampling" not in train:
                train = {**train, "sampling": PER_ENV}
            data = {**data, "train": train}
        return data

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

    def identity(self) -> dict[str, Any]:
        """What this run's checkpoints record to say whose they are: every value but ``NOT_IDENTITY``."""
        fields = self.model_dump(mode="json")
        for path in NOT_IDENTITY:
            holder = fields
            for key in path[:-1]:
                holder = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(holder, dict):
                holder.pop(path[-1], None)
        return fields

    # -- the run folder ------------------------------------------------------------------------------
    def write(self, run_dir: str | Path) -> Path:
        """Write ``resolved.json`` into the run folder with the digest of its values, atomically; returns its
        path. From then on the run is read as it is, never resolved again; whoever changes a folder's run on
        purpose (e.g. a larger budget) writes the changed run through here."""
        path = Path(run_dir) / RESOLVED_FILE
        fields = self.model_dump(mode="json")
        atomic_write_text(path, json.dumps({**fields, DIGEST_KEY: _digest(fields)}, indent=2) + "\n")
        return path

    @classmethod
    def read(cls, run_dir: str | Path) -> "ResolvedRun | None":
        """The run folder's resolved run; None when it has none (a new folder, or one of an older version).
        A file whose values no longer match its digest is refused, naming the file."""
        path = Path(run_dir) / RESOLVED_FILE
        if not path.is_file():
            return None
        try:
            fields = json.loads(path.read_text())
            if isinstance(fields, dict) and DIGEST_KEY in fields:
                _check_digest(path, fields)
            return cls.model_validate(fields)
        except (json.JSONDecodeError, UnicodeDecodeError, ValidationError) as exc:
            raise ConfigError(f"{path} is not a resolved run written by llmexplore: {exc}",
                              hint="delete it: rerunning the cell's command resolves its spec again",
                              ) from None


def _digest(fields: dict[str, Any]) -> str:
    """SHA-256 of the values (not of their layout: a file re-indented still matches)."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _check_digest(path: Path, fields: dict[str, Any]) -> None:
    """Refuse a file whose values changed after llmexplore wrote it (``fields`` loses its digest entry)."""
    if fields.pop(DIGEST_KEY) != _digest(fields):
        raise ConfigError(
            f"{path} was changed after llmexplore wrote it (its values no longer match its digest), so the "
            "run it names is not the one this folder trained",
            hint="restore the file as it was (e.g. from a backup), or train the changed run in a new output "
                 "folder; deleting it lets the cell's command write it again from its spec")
