"""Options of the grid backends, as a grid file's ``ray:`` / ``slurm:`` section or ``-b key=value``.

They live outside the backends so that a grid file is validated (with line numbers) without
importing Ray or submitit, and so that the file and the command line are checked by one model:
the command line overrides the file key by key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmexplore.errors import ConfigError, shorten


class RayOptions(BaseModel):
    """Where and how cells run on a Ray cluster."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    address: str | None = Field(None, description="'auto', 'host:6379' or 'ray://host:10001'; "
                                                   "unset: start a local Ray instance for this grid")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of the local instance (default: all)")
    num_gpus: int | None = Field(None, ge=0, description="GPUs of the local instance (default: all)")
    object_store_mb: int = Field(256, ge=80, description="object store of the local instance; cells pass "
                                                         "nothing through it, so it stays small")
    stop_grace_s: float = Field(60, gt=0, description="on cancel: seconds a cell has to checkpoint before it is killed")
    forward_env: list[str] = Field(default_factory=list, description="extra environment variables to pass to the "
                                   "cells (LLMEXPLORE_*, HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE always are)")
    check_fit: bool = Field(True, description="refuse cells that no node of the cluster can hold (turn off on "
                                              "autoscaling clusters, where such nodes appear on demand)")


class SlurmOptions(BaseModel):
    """How cells become SLURM jobs (through submitit)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    executor: Literal["slurm", "local"] = Field("slurm", description="'local': submitit's local executor, which "
                                                "runs the same jobs as processes on this machine (tests, laptops)")
    folder: str | None = Field(None, description="job scripts and logs (default: <results>/slurm); must be on a "
                                                 "file system the nodes share")
    partition: str | None = Field(None, description="SLURM partition (--partition); default: the cluster's")
    account: str | None = Field(None, description="account to charge (--account)")
    qos: str | None = Field(None, description="quality of service (--qos)")
    constraint: str | None = Field(
        None, description="node features required (--constraint), e.g. a CPU or GPU type")
    exclude: str | None = Field(None, description="nodes not to use (--exclude), e.g. node[01-03]")
    time_minutes: int | None = Field(None, ge=1, description="wall-clock limit per job; default: "
                                                             "suite.resources.time_minutes")
    gpu_type: str | None = Field(None, description="GPU model, e.g. a100: asks for --gpus-per-node=a100:N")
    pack: int = Field(1, ge=1, description="cells per job: a job runs up to this many cells side by side")
    requeue: bool = Field(True, description="let SLURM requeue a preempted job; on its time limit a job "
                                            "checkpoints its cells and requeues itself")
    max_requeues: int = Field(3, ge=0, description="how often one job may requeue itself at its time limit")
    signal_delay_s: int = Field(120, ge=10, description="warning signal this long before the time limit")
    stop_grace_s: float = Field(60, gt=0, description="seconds a cell has to checkpoint when its job must stop")
    setup: list[str] = Field(default_factory=list, description="shell lines run before each job, e.g. "
                                                               "`module load cuda` or `source venv/bin/activate`")
    python: str | None = Field(None, description="python command on the nodes (default: this interpreter)")
    sbatch: dict[str, Any] = Field(default_factory=dict, description="further sbatch options, e.g. "
                                   "{mail-type: END}; true stands for a bare flag")

    @model_validator(mode="after")
    def _grace_before_time_limit(self) -> "SlurmOptions":
        if self.stop_grace_s >= self.signal_delay_s:
            raise ValueError(f"stop_grace_s ({self.stop_grace_s:g}) must be shorter than signal_delay_s "
                             f"({self.signal_delay_s}): cells checkpoint between the warning and the time limit")
        return self


#: grid-file sections, by backend name
BACKEND_SECTIONS: dict[str, type[BaseModel]] = {"ray": RayOptions, "slurm": SlurmOptions}


def parse_options(backend: str, values: dict[str, Any]) -> BaseModel | None:
    """Validate a backend's options (grid file merged with the command line) into one ConfigError;
    None for a backend without options."""
    model = BACKEND_SECTIONS.get(backend)
    if model is None:
        if values:
            given = ", ".join(shorten(str(key)) for key in sorted(values))
            raise ConfigError(f"the {backend} backend takes no options (got {given})")
        return None
    try:
        return model(**values)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(shorten(str(p)) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append((where, f"unknown {backend} option '{where}' (valid: {', '.join(model.model_fields)})"))
            else:
                problems.append((where, f"{backend} option {where + ': ' if where else ''}{err['msg']}"))
        raise ConfigError("; ".join(msg for _, msg in problems), problems=problems) from None
