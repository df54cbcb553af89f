"""The evaluation record: a checkpoint played on fresh seeds, one versioned JSON file.

Same family as run records (``record.py``): a schema name and version, validated on read,
written atomically. Everything but ``created_at`` and ``timing`` follows from the run,
the checkpoint, the seeds and the action selection, so evaluating a checkpoint twice with
the same seeds writes the same results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmexplore.atomic import atomic_write_json
from llmexplore.benchmarks.run.record import read_versioned

EVAL_SCHEMA_NAME = "llmexplore.evaluation"
EVAL_SCHEMA_VERSION = 1
#: fields that differ between two evaluations of the same checkpoint on the same seeds
NON_RESULT_FIELDS = frozenset({"created_at", "timing"})
#: ``environment`` keys describing the machine and process an evaluation ran in (thread counts, GPUs),
#: which say where it ran, not what it found
NON_RESULT_ENVIRONMENT_KEYS = frozenset({"hardware", "host"})

ActionSelection = Literal["greedy", "sample"]


class CheckpointRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="relative to the run directory when inside it")
    kind: Literal["latest", "best", "path"]
    env_steps: int
    sha256: str


class EvalEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    seed: int = Field(description="evaluation seed")
    env_seed: int = Field(description="seed given to the env: the offset plus the evaluation seed")
    length: int
    episode_return: float = Field(alias="return", description="sum of the env's reward (unscaled)")
    intrinsic_return: float = Field(description="sum of the run's intrinsic reward, before c_int")
    terminated: bool
    truncated: bool
    stats: dict[str, Any] = Field(description="the adapter's episode stats")


class EvalTiming(BaseModel):
    model_config = ConfigDict(extra="forbid")

    wall_seconds: float
    workers: int
    episodes_per_second: float
    steps_per_second: float
    resumed_episodes: int = Field(0, description="episodes taken from an interrupted earlier evaluation")


class EvaluationRecord(BaseModel):
    schema_name: Literal["llmexplore.evaluation"] = Field(EVAL_SCHEMA_NAME, alias="schema")
    schema_version: int = EVAL_SCHEMA_VERSION
    run_dir: str
    cell: str | None = Field(description="the run's cell id, from its run record when there is one")
    method: str
    task: str
    run_seed: int
    checkpoint: CheckpointRef
    action_selection: ActionSelection
    seed_offset: int = Field(description="env seed = seed_offset + evaluation seed")
    seeds: list[int]
    metric: str = Field(description="name of the benchmark metric in metrics")
    metrics: dict[str, float] = Field(description="the adapter's summary of the episodes, plus intrinsic_return")
    episodes: list[EvalEpisode]
    environment: dict[str, Any]
    created_at: str
    timing: EvalTiming

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def write(self, path: str | Path) -> None:
        atomic_write_json(path, self.model_dump(by_alias=True, mode="json"))

    def results(self) -> dict[str, Any]:
        """The record without the fields that vary between identical evaluations (when and where it ran)."""
        dumped = self.model_dump(by_alias=True, mode="json", exclude=set(NON_RESULT_FIELDS))
        dumped["environment"] = {key: value for key, value in dumped["environment"].items()
                                 if key not in NON_RESULT_ENVIRONMENT_KEYS}
        return dumped


def read_evaluation(path: str | Path) -> EvaluationRecord:
    return read_versioned(Path(path), EvaluationRecord, EVAL_SCHEMA_NAME, EVAL_SCHEMA_VERSION,
                          "evaluation record")


def json_schema() -> dict[str, Any]:
    return EvaluationRecord.model_json_schema(by_alias=True)
