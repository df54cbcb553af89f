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

from pydantic import (BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, field_validator,
                      model_validator)

from llmexplore.atomic import atomic_write_json, json_kind
from llmexplore.errors import ConfigError, DataError
from llmexplore.paths import check_relative

SCHEMA_NAME = "llmexplore.run"
SCHEMA_VERSION = 4
RECORD_FILE = "run.json"

Status = Literal["running", "complete", "interrupted", "failed"]
#: a session found still "running" when the run restarts was killed (SIGKILL, power loss)
SessionStatus = Literal["running", "complete", "interrupted", "failed", "killed"]


class RecordedSpec(BaseModel):
    """The run as it ran: a run spec's fields, each with its final value (``ResolvedRun.spec_dict``).

    A resumption must match it, and leaderboards read a run's identity from it. The identity fields are
    typed strictly (a record edited by hand fails to read, and is listed, rather than being miscounted);
    the settings sections stay mappings as written, so a record of a version whose training or LM fields
    differ still reads."""

    model_config = ConfigDict(extra="forbid")

    method: StrictStr = Field(description="the exploration method (`llmexplore methods`)")
    task: StrictStr = Field(description="the task (`llmexplore envs`), `family:name`")
    seed: StrictInt = Field(ge=0, description="the run seed")
    steps: StrictInt | None = Field(None, gt=0, description="the env-step budget (the record's `budget`)")
    ext_coef: float | None = Field(None, description="c_ext, the extrinsic reward's coefficient")
    int_coef: float | None = Field(None, description="c_int, the method's reward coefficient")
    method_options: dict[str, Any] = Field(default_factory=dict,
                                           description="every option of the method, defaults included")
    train: dict[str, Any] = Field(default_factory=dict,
                                  description="the training settings (agents/train_config.py `TrainConfig`), "
                                              "the family's defaults and the preset filled in")
    lm: dict[str, Any] = Field(default_factory=dict,
                               description="the language-model settings (lm/config.py `LMConfig`)")
    parent: dict[str, Any] | None = Field(
        None, description="fine-tuning: the parent run's folder, the checkpoint it started from, the parts reset")
    label: StrictStr | None = Field(None, description="the row name in tables (the method's name by default)")

    @property
    def row_label(self) -> str:
        """The name of the run's row in tables: its label, else its method."""
        return self.label or self.method

    @property
    def sampling(self) -> str:
        """How the run's rollout workers stepped their envs (``train.sampling``); a record made before the
        option ran per-env."""
        return str(self.train.get("sampling") or "per-env")

    @property
    def reward_streams(self) -> str:
        """How the run's critic learned the rewards (``train.reward_streams``): ``1`` (one value head on the sum),
        or ``2`` with the intrinsic stream's discount and episodic flag; a record made before the option ran one."""
        streams = int(self.train.get("reward_streams") or 1)
        if streams == 1:
            return "1"
        return (f"2 (intrinsic gamma {self.train.get('intrinsic_gamma')}, "
                f"{'episodic' if self.train.get('intrinsic_episodic') else 'non-episodic'})")

    @property
    def cell(self) -> str:
        """``label/task/seed<N>``, as ``run.spec.cell_id`` names a cell."""
        return f"{self.row_label}/{self.task}/seed{self.seed}"


class CurvePoint(BaseModel):
    """One bin of the learning curve: the episodes that ended in it, and their means."""

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
    environment: dict[str, Any] | None = Field(
        None, description="what this process ran with: git commit and dirty flag, llmexplore, python, torch, "
                          "numpy, gymnasium, sample-factory and the environment's own versions, host, hardware, "
                          "and the machine's load average (1, 5, 15 min) at its start and at its last write "
                          "(None in records before schema 4)")


class RunFiles(BaseModel):
    """The run folder's files, relative to it."""

    model_config = ConfigDict(extra="forbid")

    episodes: str = Field("episodes.jsonl", description="one row per finished training episode (the adapter's stats)")
    intrinsic: str = Field("intrinsic.jsonl", description="one row per finished episode: its summed intrinsic reward")
    metrics: str = Field("metrics.jsonl", description="training scalars (losses, rewards, the method's own) over time")
    family_stats: str | None = Field(
        None, description="the family's own per-episode file (EnvFamily.stats_file), where it declares one")
    sf_log: str = Field("sf/sf_log.txt", description="sample-factory's own log")
    checkpoints: list[str] = Field(default_factory=list,
                                   description="the checkpoints kept when the record was written, oldest first")

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
    curve), with the paths of its other files.

    The cell writes it atomically when it starts, on a heartbeat while it trains (so a killed process
    leaves a trace) and at its end; a resumption reads it back and adds a session. Leaderboards read
    nothing else (``results/admission.py`` says which records count), and ``llmexplore schema`` prints
    its JSON Schema."""

    schema_name: Literal["llmexplore.run"] = Field(SCHEMA_NAME, alias="schema",
                                                   description="what the file is: always llmexplore.run")
    schema_version: int = Field(SCHEMA_VERSION, description="the record format's version; newer ones are refused")
    status: Status = Field(description="running, complete (the budget reached), interrupted (Ctrl-C, SIGTERM) "
                                       "or failed (see `error`)")
    cell: str = Field(description="label/task/seed: the cell's identity in a grid")
    spec: RecordedSpec = Field(description="the resolved run spec: every default filled in")
    environment: dict[str, Any] = Field(description="the latest session's package and environment versions (NLE, "
                                                    "Crafter, MiniHack), git commit, host, `hardware` (CPUs, GPUs, "
                                                    "CUDA/cuDNN/driver, devices, workers) and `artefacts` (the "
                                                    "reward model, parent checkpoint ... by sha256); each session "
                                                    "keeps its own in `sessions`")
    started_at: str = Field(description="when the run's first session started (UTC, ISO 8601)")
    updated_at: str = Field(description="the last write: a heartbeat while it trains, then its end")
    finished_at: str | None = Field(None, description="when it completed; None until then")
    budget: int = Field(description="the env-step budget (the spec's steps)")
    env_steps: int = Field(description="env steps trained so far, over every session")
    overshoot: dict[str, Any] | None = Field(
        None, description="env steps trained past the budget, the batch size, and why (see benchmarks/run/budget.py)")
    wall_seconds: float = Field(description="wall time of every session together")
    steps_per_second: float | None = Field(description="env steps per second over the sessions that trained")
    sessions: list[Session] = Field(default_factory=list, description="every process that worked on the run")
    metric: str = Field(description="name of the benchmark metric in final_metrics and the curve")
    final_metrics: dict[str, float] = Field(
        default_factory=dict, description="the metric and the family's other summaries over the final window "
                                          "of episodes that ended within the budget, and `intrinsic_return`")
    final_window: str = Field("", description="which episodes final_metrics counts, in words")
    method_metrics: dict[str, float] = Field(default_factory=dict,
                                             description="the method's own scalars at the last report")
    curve: list[CurvePoint] = Field(default_factory=list, description="the learning curve, in bins of env steps")
    files: RunFiles = Field(default_factory=RunFiles, description="the run's other files, relative to its folder")
    parent: dict[str, Any] | None = Field(
        None, description="fine-tuning: the parent's run folder and checkpoint, and what loading it reported")
    error: dict[str, Any] | None = Field(
        None, description="why it failed or stopped: message, traceback and the tail of sample-factory's log")
    inert: dict[str, Any] | None = Field(
        None, description="set when the method's intrinsic reward (c_int > 0) was one constant on every step: the "
                          "value, the env steps checked and why the row is no result of the method "
                          "(benchmarks/run/inert.py); tables mark such rows instead of ranking them")

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
    """JSON Schema of run records, with their JSON key names (``schema``); ``llmexplore schema`` prints it."""
    return RunRecord.model_json_schema(by_alias=True)
