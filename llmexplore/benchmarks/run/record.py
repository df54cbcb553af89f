"""The run record: one versioned JSON file per cell, written atomically.

Readers check ``schema_version``; a record from a newer schema is refused rather than
misread. ``llmexplore schema`` prints the JSON Schema. Version 2 added ``overshoot``
(version-1 records read as before, with none). Version 3 renamed ``files.crafter_stats`` to
``files.family_stats`` (any family's own per-episode file); older records read under the new name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmexplore.atomic import atomic_write_json, json_kind
from llmexplore.errors import ConfigError, DataError
from llmexplore.paths import check_relative

SCHEMA_NAME = "llmexplore.run"
SCHEMA_VERSION = 3
RECORD_FILE = "run.json"

Status = Literal["running", "complete", "interrupted", "failed"]
#: a session found still "running" when the run restarts was killed (SIGKILL, power loss)
SessionStatus = Literal["running", "complete", "interrupted", "failed", "killed"]


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env_steps: int = Field(description="end of the bin of env steps")
    episodes: int = Field(description="episodes that ended in the bin")
    episode_return: float | None = Field(
        description="mean env return of those episodes (unscaled); none when none ended")
    intrinsic_return: float | None = Field(description="mean sum of the method's reward per episode, before c_int")
    metric: float | None = Field(description="the benchmark metric over the bin's episodes")


class Session(BaseModel):
    """One process that worked on the run (a resumed run has several)."""

    model_config = ConfigDict(extra="forbid")

    started_at: str = Field(description="when the process started, ISO 8601 UTC")
    seconds: float = Field(description="wall-clock seconds the process trained")
    env_steps_start: int = Field(
        description="the run's env steps when the process started (its resume point)")
    env_steps_end: int = Field(description="the run's env steps when the process stopped")
    status: SessionStatus = Field(
        description="how the process ended: running (still, or killed before it could say), complete, "
                    "interrupted, failed or killed")


class RunFiles(BaseModel):
    """The run folder's files, relative to it."""

    model_config = ConfigDict(extra="forbid")

    episodes: str = "episodes.jsonl"
    intrinsic: str = "intrinsic.jsonl"
    metrics: str = "metrics.jsonl"
    family_stats: str | None = Field(
        None, description="the family's own per-episode file (EnvFamily.stats_file), where it declares one")
    sf_log: str = "sf/sf_log.txt"
    checkpoints: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _renamed_in_version_3(cls, data: Any) -> Any:
        """Records before schema 3 name the family's stats file ``crafter_stats``."""
        if isinstance(data, dict) and "crafter_stats" in data and "family_stats" not in data:
            data = {("family_stats" if key == "crafter_stats" else key): value for key, value in data.items()}
        return data

    @field_validator("*")
    @classmethod
    def _inside_the_run_folder(cls, value: Any, info: Any) -> Any:
        """Every file the record names is joined to its run folder: none may lead out of it."""
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                try:
                    check_relative(text, f"files.{info.field_name}")
                except ConfigError as exc:  # as a validation error: readers name the record file
                    raise ValueError(exc.message) from None
        return value


class RunRecord(BaseModel):
    """A cell's versioned record (``run.json``): what ran (the resolved spec, versions, commit, hardware),
    how far it got (status, env steps, sessions, wall time) and what it scored (final metrics, learning
    curve), with the paths of its other files. Written atomically while the run goes and at its end;
    leaderboards read nothing else, and ``llmexplore schema`` prints its JSON Schema."""

    schema_name: Literal["llmexplore.run"] = Field(SCHEMA_NAME, alias="schema")
    schema_version: int = SCHEMA_VERSION
    status: Status
    cell: str = Field(description="label/task/seed: the cell's identity in a grid")
    spec: dict[str, Any] = Field(description="the resolved run spec: every default filled in")
    environment: dict[str, Any] = Field(description="package versions, git commit, host, and `hardware`: CPUs, "
                                                    "GPUs, CUDA/cuDNN/driver, learner and inference devices, workers")
    started_at: str
    updated_at: str
    finished_at: str | None = None
    budget: int
    env_steps: int
    overshoot: dict[str, Any] | None = Field(
        None, description="env steps trained past the budget, the batch size, and why (see benchmarks/run/budget.py)")
    wall_seconds: float
    steps_per_second: float | None
    sessions: list[Session] = Field(default_factory=list)
    metric: str = Field(description="name of the benchmark metric in final_metrics and the curve")
    final_metrics: dict[str, float] = Field(default_factory=dict)
    final_window: str = ""
    method_metrics: dict[str, float] = Field(default_factory=dict)
    curve: list[CurvePoint] = Field(default_factory=list)
    files: RunFiles = Field(default_factory=RunFiles)
    parent: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def write(self, run_dir: str | Path) -> None:
        """Written in this schema's shape, so under its version even when the record was read from an older one."""
        data = self.model_dump(by_alias=True, mode="json")
        atomic_write_json(Path(run_dir) / RECORD_FILE, {**data, "schema_version": SCHEMA_VERSION})


def read_record(path: str | Path) -> RunRecord:
    """Read and validate a record (a run directory or the file itself)."""
    path = Path(path)
    if path.is_dir():
        path = path / RECORD_FILE
    return read_versioned(path, RunRecord, SCHEMA_NAME, SCHEMA_VERSION, "run record")


Model = TypeVar("Model", bound=BaseModel)


def read_versioned(path: Path, model: type[Model], schema: str, newest: int, kind: str) -> Model:
    """Read one of our versioned JSON files (run and evaluation records): a file that is missing,
    not JSON, not ours or from a newer schema is refused with a DataError naming ``kind``, never
    misread; an older version is read by the model's defaults."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"no {kind} at {path}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{kind} {path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise DataError(f"{kind} {path} nests its values too deeply to be one of ours",
                        hint="move the file aside; rerunning writes a new one") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{kind} {path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise DataError(f"{kind} {path} holds {json_kind(data)} instead of a JSON object: it is not an "
                        f"llmexplore {kind}", hint="move the file aside; rerunning writes a new one")
    version = data.get("schema_version")
    if data.get("schema") != schema or not isinstance(version, int):
        raise DataError(f"{path} is not an llmexplore {kind}")
    if version > newest:
        raise DataError(f"{path} uses {kind} schema {version}; this llmexplore reads up to {newest}",
                        hint="upgrade llmexplore")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise DataError(f"{kind} {path} is malformed: {exc}") from None
    except RecursionError:
        raise DataError(f"{kind} {path} nests its values too deeply to be one of ours",
                        hint="move the file aside; rerunning writes a new one") from None


def json_schema() -> dict[str, Any]:
    return RunRecord.model_json_schema(by_alias=True)
