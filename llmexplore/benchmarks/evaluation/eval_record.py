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
    kind: Literal["latest", "best", "path"] = Field(
        description="how the checkpoint was chosen: latest, best, or a path given")
    env_steps: int = Field(description="env steps the policy had trained for when the checkpoint was saved")
    sha256: str = Field(description="SHA-256 of the checkpoint file, hex")


class EvalEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    seed: int = Field(description="evaluation seed")
    env_seed: int = Field(description="seed given to the env: the offset plus the evaluation seed")
    length: int = Field(description="steps in the episode")
    episode_return: float = Field(alias="return", description="sum of the env's reward (unscaled)")
    intrinsic_return: float = Field(description="sum of the run's intrinsic reward, before c_int")
    terminated: bool = Field(description="the episode ended in the env (death, success)")
    truncated: bool = Field(description="the episode was cut at the env's step limit")
    stats: dict[str, Any] = Field(description="the adapter's episode stats")


class EvalTiming(BaseModel):
    model_config = ConfigDict(extra="forbid")

    wall_seconds: float = Field(description="seconds the evaluation took")
    workers: int = Field(description="processes that played episodes")
    episodes_per_second: float = Field(description="episodes played per wall-clock second")
    steps_per_second: float = Field(description="env steps per wall-clock second, over all workers")
    resumed_episodes: int = Field(0, description="episodes taken from an interrupted earlier evaluation")


class EvaluationRecord(BaseModel):
    schema_name: Literal["llmexplore.evaluation"] = Field(
        EVAL_SCHEMA_NAME, alias="schema", description="record type, always llmexplore.evaluation (JSON key: "
                                                      "schema)")
    schema_version: int = Field(
        EVAL_SCHEMA_VERSION, description="version of this record's layout; a reader refuses newer ones")
    run_dir: str = Field(description="the evaluated run's directory")
    cell: str | None = Field(description="the run's cell id, from its run record when there is one")
    method: str = Field(description="the run's exploration method")
    task: str = Field(description="the run's task")
    run_seed: int = Field(description="the run's training seed")
    checkpoint: CheckpointRef = Field(description="which checkpoint was played")
    action_selection: ActionSelection = Field(
        description="greedy (the most likely action) or sample (from the policy's distribution)")
    seed_offset: int = Field(description="env seed = seed_offset + evaluation seed")
    seeds: list[int] = Field(description="evaluation seeds, one episode each")
    metric: str = Field(description="name of the benchmark metric in metrics")
    metrics: dict[str, float] = Field(description="the adapter's summary of the episodes, plus intrinsic_return")
    episodes: list[EvalEpisode] = Field(description="one entry per episode, in seed order")
    environment: dict[str, Any] = Field(
        description="versions, git commit, host and hardware of the evaluating process")
    created_at: str = Field(description="when the record was written, ISO 8601 UTC")
    timing: EvalTiming = Field(description="how long it took; differs between identical evaluations")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def write(self, path: str | Path) -> None:
        """Write the record as JSON with its JSON key names (``schema``), atomically."""
        atomic_write_json(path, self.model_dump(by_alias=True, mode="json"))

    def results(self) -> dict[str, Any]:
        """The record without the fields that vary between identical evaluations (when and where it ran)."""
        dumped = self.model_dump(by_alias=True, mode="json", exclude=set(NON_RESULT_FIELDS))
        dumped["environment"] = {key: value for key, value in dumped["environment"].items()
                                 if key not in NON_RESULT_ENVIRONMENT_KEYS}
        return dumped


def read_evaluation(path: str | Path) -> EvaluationRecord:
    """The evaluation record at ``path``; a file that is missing, unreadable, not one or of a newer schema
    raises DataError (``read_versioned``)."""
    return read_versioned(Path(path), EvaluationRecord, EVAL_SCHEMA_NAME, EVAL_SCHEMA_VERSION,
                          "evaluation record")


def json_schema() -> dict[str, Any]:
    """JSON Schema of evaluation records, with their JSON key names (``schema``, not ``schema_name``)."""
    return EvaluationRecord.model_json_schema(by_alias=True)
