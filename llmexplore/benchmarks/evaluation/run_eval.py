"""Evaluate a run's checkpoint on fresh seeds and write an evaluation record.

Each seed is one episode, played by worker processes; finished episodes are appended to a
``.partial.jsonl`` beside the record, so an interrupted evaluation resumes where it stopped
(rows are reused only for the same checkpoint file and action selection).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from llmexplore.agents.policy import Policy, load_policy
from llmexplore.agents.rollout import (
    EVAL_SEED_OFFSET,
    episode_row,
    play_episode,
    require_replayable,
    score_episode,
    stats_rows,
)
from llmexplore.atomic import JsonlAppender, read_jsonl
from llmexplore.benchmarks.evaluation.episode_pool import default_workers, run_episodes
from llmexplore.benchmarks.evaluation.episode_progress import EpisodeProgress
from llmexplore.benchmarks.evaluation.eval_record import CheckpointRef, EvalEpisode, EvalTiming, EvaluationRecord
from llmexplore.benchmarks.run.record import RECORD_FILE, read_record
from llmexplore.envs import make_adapter
from llmexplore.errors import ConfigError

EVAL_DIR = "eval"


class EvaluateJob:
    """Plays and scores one episode per seed; picklable (the loaded parts stay behind)."""

    def __init__(self, run_dir: str, checkpoint: str, greedy: bool, policy: Policy | None = None):
        self.run_dir, self.checkpoint, self.greedy = run_dir, checkpoint, greedy
        self._policy = policy
        self._env = self._method = None

    def __getstate__(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "checkpoint": self.checkpoint, "greedy": self.greedy}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def setup(self) -> None:
        """Load the policy, its env and its method once per worker process."""
        if self._policy is None:
            self._policy = load_policy(self.run_dir, self.checkpoint)
        self._env = self._policy.make_env()
        self._method = self._policy.make_method()

    def run(self, seed: int) -> dict[str, Any]:
        """Play one episode on ``seed`` and return its record row."""
        trace = play_episode(self._policy, self._env, seed, greedy=self.greedy)
        return episode_row(score_episode(self._method, self._policy, trace))


def check_seeds(seeds: Sequence[int]) -> list[int]:
    """The seeds as ints; an error for none, negative ones or repeats."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("no seeds to evaluate", hint="give --episodes N or --seeds S [S ...]")
    negative = [s for s in seeds if s < 0]
    if negative:
        raise ConfigError(f"evaluation seeds must be >= 0, got {negative}")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ConfigError(f"evaluation seeds repeat: {repeated}", hint="each seed is one episode; repeats would replay it")
    return seeds


def default_output(run_dir: Path, policy: Policy, greedy: bool) -> Path:
    """Where an evaluation is written when no --out is given: under the run's evaluation folder."""
    mode = "greedy" if greedy else "sample"
    return run_dir / EVAL_DIR / f"{policy.checkpoint.path.stem}.{mode}.json"


def evaluate(run_dir: str | Path, seeds: Sequence[int], *, checkpoint: str = "latest", greedy: bool = False,
             workers: int | None = None, out: str | Path | None = None, progress: bool = True) -> tuple[EvaluationRecord, Path]:
    """Play one episode per seed with the checkpoint's policy; write and return the record."""
    from llmexplore.atomic import ensure_writable

    seeds = check_seeds(seeds)
    policy = load_policy(run_dir, checkpoint)  # every check happens here, before any episode
    require_replayable(policy)
    run_path = Path(policy.settings.run_dir)
    cell = _cell(run_path)  # a bad run record stops here, before any episode is played
    out_path = Path(out).expanduser().resolve() if out else default_output(run_path, policy, greedy)
    ensure_writable(out_path.parent)
    mode = "greedy" if greedy else "sample"

    partial = out_path.with_name(out_path.name + ".partial.jsonl")
    reused = _resumable_rows(partial, policy, mode, seeds)
    todo = [s for s in seeds if s not in reused]
    workers = default_workers(len(todo)) if workers is None else max(1, workers)
    job = EvaluateJob(str(run_path), str(policy.checkpoint.path), greedy, policy=policy)
    view = EpisodeProgress(f"evaluate {policy.settings.run.method}/{policy.settings.run.task}", len(seeds), enabled=progress)
    for row in reused.values():
        view.episode(row["seed"], row["length"], "(resumed)")
    started = time.time()
    fresh = _play(job, todo, workers, partial, policy.checkpoint.sha256, mode, view)
    seconds = time.time() - started
    by_seed = {**reused, **{r["seed"]: r for r in fresh}}
    timing = EvalTiming(
        wall_seconds=round(seconds, 3),
        workers=workers,
        episodes_per_second=round(len(fresh) / seconds, 4) if seconds > 0 else 0.0,
        steps_per_second=round(sum(r["length"] for r in fresh) / seconds, 1) if seconds > 0 else 0.0,
        resumed_episodes=len(reused),
    )
    record = _record(policy, run_path, cell, mode, seeds, [by_seed[s] for s in seeds], timing)
    record.write(out_path)
    partial.unlink(missing_ok=True)
    return record, out_path


def _play(job: EvaluateJob, seeds: list[int], workers: int, partial: Path, checkpoint_sha256: str, mode: str,
          view: EpisodeProgress) -> list[dict[str, Any]]:
    """Play the seeds' episodes, each row appended to the ``partial`` file as it finishes (a resume reuses it)."""
    with JsonlAppender(partial) as sink:
        def on_result(row: dict[str, Any]) -> None:
            sink.write({"checkpoint_sha256": checkpoint_sha256, "action_selection": mode, "episode": row})
            view.episode(row["seed"], row["length"], f"return {row['return']:.2f}")

        try:
            return run_episodes(job, seeds, workers, on_result)
        finally:
            view.close()


def _record(policy: Policy, run_path: Path, cell: str | None, mode: str, seeds: list[int],
            rows: list[dict[str, Any]], timing: EvalTiming) -> EvaluationRecord:
    """The evaluation record of the episodes ``rows`` (one per seed, in order)."""
    from llmexplore.benchmarks.run.cell_record import utc_now
    from llmexplore.benchmarks.run.provenance import environment_info

    adapter = make_adapter(policy.settings.run.task)
    metrics = adapter.summarize(stats_rows(rows))
    metrics["intrinsic_return"] = float(np.mean([r["intrinsic_return"] for r in rows]))
    return EvaluationRecord(
        run_dir=str(run_path),
        cell=cell,
        method=policy.settings.run.method,
        task=policy.settings.run.task,
        run_seed=policy.settings.run.seed,
        checkpoint=CheckpointRef(path=relative_to_run(policy.checkpoint.path, run_path), kind=policy.checkpoint.kind,
                                 env_steps=policy.checkpoint.env_steps, sha256=policy.checkpoint.sha256),
        action_selection=mode,
        seed_offset=EVAL_SEED_OFFSET,
        seeds=seeds,
        metric=adapter.metric,
        metrics={k: float(v) for k, v in metrics.items() if math.isfinite(float(v))},
        episodes=[EvalEpisode.model_validate(r) for r in rows],
        environment=environment_info(adapter),
        created_at=utc_now(),
        timing=timing,
    )


def _resumable_rows(partial: Path, policy: Policy, mode: str, seeds: Sequence[int]) -> dict[int, dict[str, Any]]:
    wanted = set(seeds)
    rows: dict[int, dict[str, Any]] = {}
    for entry in read_jsonl(partial):
        row = entry.get("episode") or {}
        if (entry.get("checkpoint_sha256") == policy.checkpoint.sha256 and entry.get("action_selection") == mode
                and row.get("seed") in wanted):
            rows[int(row["seed"])] = row
    if not rows:
        partial.unlink(missing_ok=True)  # left by another checkpoint or mode: nothing to reuse
    return rows


def _cell(run_dir: Path) -> str | None:
    if not (run_dir / RECORD_FILE).is_file():
        return None
    return read_record(run_dir).cell


def relative_to_run(path: Path, root: Path) -> str:
    """``path`` relative to the run folder when inside it, else as is."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
