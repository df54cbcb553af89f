"""Run one (method, task, seed) cell: validate, train or resume, and write its record."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from llmexplore.agents.checkpoints import (
    checkpoint_env_steps,
    describe_set_aside,
    list_checkpoints,
    newest_readable_checkpoint,
    remove_partial_saves,
    set_aside,
)
from llmexplore.atomic import JsonlAppender, ensure_writable, log_tail, read_jsonl, rewrite_jsonl
from llmexplore.benchmarks.run.budget import overshoot_note
from llmexplore.benchmarks.run.cell_record import (base_record, close_session, earlier_sessions, learning_curve,
                                                  utc_now)
from llmexplore.benchmarks.run.progress import ProgressView
from llmexplore.benchmarks.run.provenance import load_average
from llmexplore.benchmarks.run.lock import RunFolderLock
from llmexplore.benchmarks.run.record import RunFiles, RunRecord, Session
from llmexplore.benchmarks.run.tensorboard import RunBoard
from llmexplore.benchmarks.run.space_reserve import SpaceReserve
from llmexplore.benchmarks.run.inert import InertWatch
from llmexplore.benchmarks.run.folder import adopt_folder, folder_record, is_complete
from llmexplore.benchmarks.run.spec import ResolvedRun, RunSpec, cell_id, resolve, settle_here
from llmexplore.envs import EnvAdapter, make_adapter
from llmexplore.envs.registry import get_family

if TYPE_CHECKING:  # pragma: no cover (the engine loads torch and sample-factory)
    from llmexplore.agents.training import TrainResult

#: how far the episode log is known to be complete: ``{"env_steps": N}`` means every episode of the
#: experience up to N env steps is in episodes.jsonl. A checkpoint past N does not count as a resume
#: point (``_resume_point``): resuming from it would lose the episodes that had not reached the log.
EPISODES_THROUGH_FILE = "episodes-through.json"
#: prefix of a checkpoint set aside because it is ahead of the episodes on disk (kept, never loaded)
AHEAD_PREFIX = "ahead-of-episodes-"
#: lines of sample-factory's log a failed run's record keeps
SF_LOG_TAIL_LINES = 40
HEARTBEAT_SEC = 10.0


class CellSink:
    """Receives training events: appends episodes and metrics to the run's files."""

    def __init__(self, run_dir: Path, files: RunFiles, view: ProgressView, heartbeat: Callable[[int], None],
                 start_steps: int = 0, board: RunBoard | None = None, inert_watch: InertWatch | None = None):
        self.heartbeat = heartbeat
        self.inert_watch = inert_watch
        self.board = board
        self._last_beat = time.time()
        self._start_steps = start_steps
        self._stepped = False
        self.episodes = JsonlAppender(run_dir / files.episodes)
        self.intrinsic = JsonlAppender(run_dir / files.intrinsic)
        self.metrics_file = JsonlAppender(run_dir / files.metrics)
        self.view = view
        self.last_metrics: dict[str, float] = {}
        self.parent: dict[str, Any] | None = None
        self._through_path = run_dir / EPISODES_THROUGH_FILE
        self._through = -1
        self.on_episodes_through(start_steps)  # what the resume kept (``_trim_logs``)

    def on_episode(self, row: dict[str, Any]) -> None:
        """Append the episode's row to the episode log (flushed); its return goes to view and TensorBoard."""
        self.episodes.write(row)
        self.view.episode_return(float(row.get("return", 0.0)))
        if self.board is not None:
            self.board.episode(row)

    def on_intrinsic_returns(self, env_steps: int, returns: list[float]) -> None:
        """Append one row per episode that ended in the batch, at ``env_steps``; also to TensorBoard."""
        for value in returns:
            self.intrinsic.write({"env_steps": env_steps, "intrinsic_return": value})
        if self.board is not None:
            self.board.intrinsic_returns(env_steps, returns)

    def on_metrics(self, env_steps: int, metrics: dict[str, float]) -> None:
        """Append the metrics row and keep it as the last one (the record's ``method_metrics``)."""
        self.last_metrics = metrics
        self.metrics_file.write({"env_steps": env_steps, **metrics})
        warning = self.inert_watch.row(env_steps, metrics) if self.inert_watch is not None else None
        if warning:
            print(warning, file=sys.stderr, flush=True)
        if self.board is not None:
            self.board.metrics(env_steps, metrics)

    def on_parent(self, report: dict[str, Any]) -> None:
        """Keep the fine-tuning report (tensors loaded, not loaded, reset) for the record's ``parent``."""
        self.parent = report

    def on_episodes_through(self, env_steps: int) -> None:
        """Every episode up to ``env_steps`` has been passed to ``on_episode`` (so it is on disk: each
        row is flushed as it is written); recorded after those rows, for ``_resume_point``."""
        if env_steps <= self._through:
            return
        self._through = env_steps
        tmp = self._through_path.with_name(f".{EPISODES_THROUGH_FILE}.tmp")
        tmp.write_text(json.dumps({"env_steps": env_steps}) + "\n")  # no fsync: this guards against a
        os.replace(tmp, self._through_path)  # stopped process; an unreadable file means 0, the safe side

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        """Update the view; a heartbeat at the first training step, then every ``HEARTBEAT_SEC`` seconds."""
        self.view.update(env_steps, steps_per_second)
        # a beat on the first training step too: the record then shows at once that the cell is
        # stepping (the grid view, and the scheduling-overhead benchmark, read it)
        first = not self._stepped and env_steps > self._start_steps
        if first or time.time() - self._last_beat >= HEARTBEAT_SEC:
            self._stepped = self._stepped or first
            self._last_beat = time.time()
            self.heartbeat(env_steps)

    def close(self) -> None:
        """Close the run's log files, its TensorBoard writer and the progress view."""
        for appender in (self.episodes, self.intrinsic, self.metrics_file):
            appender.close()
        if self.board is not None:
            self.board.close()
        self.view.close()


def run_cell(run: RunSpec | ResolvedRun, out_dir: str | Path, *, quiet: bool = False) -> RunRecord:
    """Train one cell to its budget, resuming from the last checkpoint if the run was cut short.

    A run spec is resolved here (a run started by hand); a resolved run is run as it is, once what
    depends on this machine is settled and checked (``settle_here``). Either is checked against what the
    folder holds (``adopt_folder``). A folder a grid prepared is trained by ``run_folder``."""
    run = resolve(run) if isinstance(run, RunSpec) else settle_here(run)
    run_dir = Path(out_dir).expanduser().resolve()
    ensure_writable(run_dir)
    with RunFolderLock(run_dir):  # one writer per run folder; a second is refused naming the first
        return _train_unless_complete(run, run_dir, adopt_folder(run_dir, run), quiet)


def run_folder(out_dir: str | Path, *, quiet: bool = False) -> RunRecord | None:
    """Train the resolved run a prepared folder holds (its ``resolved.json``: a grid's cell, or a run
    resumed by hand with ``run --out DIR``), as it is; None when the folder holds none.

    The folder took this run when it was prepared (``adopt_folder``), so it is not compared again: only
    what depends on this machine is settled (``settle_here``: a scheduler's node may differ from the
    machine that resolved it, and each local cell gets its own share of threads)."""
    run_dir = Path(out_dir).expanduser().resolve()
    stored = ResolvedRun.read(run_dir)
    if stored is None:
        return None
    run = settle_here(stored)
    ensure_writable(run_dir)
    with RunFolderLock(run_dir):
        return _train_unless_complete(run, run_dir, folder_record(run_dir), quiet)


def _train_unless_complete(run: ResolvedRun, run_dir: Path, previous: RunRecord | None, quiet: bool) -> RunRecord:
    if is_complete(previous, run.budget):
        return previous
    return _train_cell(run, run_dir, previous, quiet)


def _train_cell(run: ResolvedRun, run_dir: Path, previous: RunRecord | None, quiet: bool) -> RunRecord:
    adapter = make_adapter(run.task)
    resume_steps = _resume_point(run_dir, run.identity())
    stats_file = get_family(adapter.task.family).stats_file
    files = RunFiles(family_stats=stats_file.name if stats_file else None)  # the record's name for it
    _trim_logs(run_dir, files, resume_steps)
    session = CellSession.start(run, adapter, run_dir, files, previous, resume_steps)
    view = ProgressView(cell_id(run), run.budget, start=resume_steps, enabled=not quiet)
    watch = InertWatch.for_run(run.method, run.int_coef, run.budget)
    watch.seed(read_jsonl(run_dir / files.metrics))  # what the resume kept
    sink = CellSink(run_dir, files, view, session.heartbeat, start_steps=resume_steps,
                    board=RunBoard(run_dir, adapter), inert_watch=watch)
    wandb_run = _start_wandb(run, run_dir, quiet)
    try:
        result = (_train(run, run_dir, sink, resume_steps, quiet) if resume_steps < run.budget
                  else _already_trained(resume_steps))
        sink.close()  # its last scalars (the final benchmark value) still reach W&B
        _finish_wandb(wandb_run, failed=result.status == "failed")
        wandb_run = None
        session.finish(result, sink)
    except BaseException as exc:  # also a final record that could not be written (a full disk)
        try:
            sink.close()
        except OSError:  # the files cannot take their last lines (a full disk): the record still says why
            pass
        _finish_wandb(wandb_run, failed=True)
        session.fail(exc)
        raise
    return session.record


def _resume_point(run_dir: Path, identity: dict[str, Any] | None = None) -> int:
    """Env steps of the newest sound checkpoint the episode log covers (0: start afresh); unreadable or
    corrupt ones (another run's, given the run's ``identity``), and ones ahead of the episodes on disk, are
    set aside (renamed, never deleted) and named."""
    remove_partial_saves(run_dir)
    checkpoint, skipped = newest_readable_checkpoint(run_dir, identity)
    ahead = _set_aside_checkpoints_ahead_of_episodes(run_dir)
    if ahead:
        checkpoint, more = newest_readable_checkpoint(run_dir, identity)
        skipped += more
    for path, why in skipped:
        print(f"llmexplore run: {describe_set_aside(path, why)}", file=sys.stderr, flush=True)
    if checkpoint is not None:
        print(f"llmexplore run: resuming from {checkpoint.name} "
              f"({checkpoint_env_steps(checkpoint):,} env steps)", file=sys.stderr, flush=True)
    elif skipped or ahead:
        print("llmexplore run: no usable checkpoint left: starting from the beginning", file=sys.stderr, flush=True)
    return checkpoint_env_steps(checkpoint) if checkpoint else 0


def episodes_through(run_dir: Path) -> int | None:
    """Env steps up to which the episode log is complete; None for a folder of a version that did not
    record it (its checkpoints are taken as they are); 0 when the file cannot be read."""
    path = run_dir / EPISODES_THROUGH_FILE
    if not path.exists():
        return None
    try:
        value = json.loads(path.read_text())["env_steps"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    return value if type(value) is int and value >= 0 else 0


def _set_aside_checkpoints_ahead_of_episodes(run_dir: Path) -> list[Path]:
    """A process stopped right after a checkpoint (Ctrl-C saves one) may not have received the episodes
    of its last batches: resuming from it would skip them for good (a cell once resumed as "complete"
    with an empty episode log). Such a checkpoint does not count; the run resumes from an older one and
    trains that stretch again."""
    through = episodes_through(run_dir)
    if through is None:
        return []
    moved = []
    for path in list_checkpoints(run_dir):
        steps = checkpoint_env_steps(path)
        if steps > through:
            aside = set_aside(path, AHEAD_PREFIX)  # its digest too
            moved.append(aside)
            print(f"llmexplore run: checkpoint {path.name} ({steps:,} env steps) is ahead of the episodes "
                  f"on disk (through {through:,}); kept as {aside.name}, resuming from an earlier point",
                  file=sys.stderr, flush=True)
    return moved


def _train(run: ResolvedRun, run_dir: Path, sink: CellSink, resume_steps: int, quiet: bool) -> "TrainResult":
    """The engine on the resolved run."""
    from llmexplore.agents.training import train

    return train(run, run_dir, sink, resume_env_steps=resume_steps, quiet=True)


def _already_trained(resume_steps: int) -> "TrainResult":
    """A run killed after the checkpoint that reached its budget (before its record said complete): that
    checkpoint and the logs it covers are the whole run, so it is finished without another batch."""
    from llmexplore.agents.training import TrainResult

    return TrainResult("complete", resume_steps, 0, 0.0)


def _start_wandb(run: ResolvedRun, run_dir: Path, quiet: bool) -> Any:
    """The run's W&B run when it asks for one (None otherwise): started before training, so every scalar
    written from then on is logged, and finished after the sink's last scalars (``_finish_wandb``)."""
    from llmexplore.agents.wandb_run import start_wandb, uses_wandb

    if not uses_wandb(run.train):
        return None
    return start_wandb(run_dir, run.task, run.label, run.seed, run.spec_dict(), quiet=quiet)


@dataclass
class CellSession:
    """One process's stretch of work on a cell, and the record it keeps current: a provisional session
    with a heartbeat while training (so a killed process leaves a trace), then the final one."""

    run: ResolvedRun
    adapter: EnvAdapter
    run_dir: Path
    files: RunFiles
    record: RunRecord
    #: sessions of earlier processes
    earlier: list[Session]
    started_at: str
    start_steps: int
    clock: float = field(default_factory=time.time)
    #: room set aside so that the record can still be rewritten when the disk fills
    reserve: SpaceReserve | None = None
    #: env steps of the last heartbeat: how far this session provably got (what a failed session keeps)
    beat_steps: int = 0
    #: the machine's load average when this session started
    load_at_start: list[float] = field(default_factory=load_average)

    def provenance(self) -> dict[str, Any]:
        """What this session runs with (the record's ``environment`` as this process found it) and the
        machine's load at its start and now: a reviewer can tell which commit and stack trained which steps."""
        return {**self.record.environment, "load_average_start": self.load_at_start,
                "load_average_end": load_average()}

    @classmethod
    def start(cls, run: ResolvedRun, adapter: EnvAdapter, run_dir: Path, files: RunFiles,
              previous: RunRecord | None, resume_steps: int) -> "CellSession":
        """Begin this process's session: a record keeping the earlier sessions (a killed one marked so), the
        disk reserve held, and a first heartbeat at ``resume_steps`` written."""
        started_at = utc_now()
        # earlier sessions stay in the record even when none left a checkpoint: the work was done
        earlier = earlier_sessions(previous, resume_steps)
        record = base_record(run, adapter, files, started_at, previous, earlier, resume_steps)
        session = cls(run, adapter, run_dir, files, record, earlier, started_at, resume_steps,
                      reserve=SpaceReserve(run_dir))
        session.reserve.hold()
        session.heartbeat(resume_steps)
        return session

    def heartbeat(self, env_steps: int) -> None:
        """Rewrite the record, this session running up to ``env_steps``: a killed process leaves a trace."""
        running = Session(started_at=self.started_at, seconds=round(time.time() - self.clock, 3),
                          env_steps_start=self.start_steps, env_steps_end=env_steps, status="running",
                          environment=self.provenance())
        self.record.sessions = self.earlier + [running]
        self.record.env_steps = self.beat_steps = env_steps
        self.record.updated_at = utc_now()
        self.record.write(self.run_dir)

    def fail(self, exc: BaseException) -> None:
        """Write the final record of a session that raised: interrupted for KeyboardInterrupt, else failed,
        with the error, traceback and log tail. It ends at its last heartbeat's env steps, the progress it
        provably made (a killed session's record says as much), so the record never falls below what an
        earlier heartbeat showed and the work done counts in steps/s."""
        record = self.record
        record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        record.error = {"message": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(limit=20),
                        "log_tail": log_tail(self.run_dir / self.files.sf_log, SF_LOG_TAIL_LINES)}
        record.sessions = list(self.earlier)  # this session once: finishing may have closed it before it raised
        record.finished_at = None
        close_session(record, self.started_at, time.time() - self.clock, self.start_steps,
                       max(self.start_steps, self.beat_steps), environment=self.provenance())
        self._write_last(record)

    def _write_last(self, record: RunRecord) -> None:
        """The session's final record, written even on a full disk (the reserve is given up for it)."""
        reserve = self.reserve or SpaceReserve(self.run_dir)
        reserve.write(lambda: record.write(self.run_dir))
        reserve.release()

    def finish(self, result: "TrainResult", sink: CellSink) -> None:
        """Write the final record of a session the engine returned from: its status and end step, and the
        final metrics, curve and checkpoints as the folder now holds them."""
        record = self.record
        record.status = result.status
        if result.status == "failed":
            record.error = {"message": result.error or "sample-factory reported a failure",
                            "log_tail": log_tail(self.run_dir / self.files.sf_log, SF_LOG_TAIL_LINES)}
        self.beat_steps = max(self.beat_steps, result.env_steps)  # reached, should finishing still fail
        close_session(record, self.started_at, result.session_seconds, self.start_steps, result.env_steps,
                       environment=self.provenance())
        _finalize(record, self.run, self.adapter, self.run_dir, self.files, sink)
        self._write_last(record)


def _finish_wandb(run: Any, failed: bool) -> None:
    if run is not None:
        from llmexplore.agents.wandb_run import finish_wandb

        finish_wandb(run, failed)




def _trim_logs(run_dir: Path, files: RunFiles, resume_steps: int) -> None:
    """Keep only what the checkpoint we resume from had seen, so nothing is counted twice."""
    for name in (files.episodes, files.intrinsic, files.metrics):
        path = run_dir / name
        if not path.exists():
            continue
        if resume_steps == 0:
            path.unlink()
        else:
            rewrite_jsonl(path, [r for r in read_jsonl(path) if r.get("env_steps", 0) <= resume_steps])


def _finalize(record: RunRecord, run: ResolvedRun, adapter: EnvAdapter, run_dir: Path, files: RunFiles,
              sink: CellSink) -> None:
    episodes = read_jsonl(run_dir / files.episodes)
    intrinsic = read_jsonl(run_dir / files.intrinsic)
    record.final_metrics, record.final_window = adapter.final_metrics(episodes, run.budget)
    returns = [r["intrinsic_return"] for r in intrinsic if r["env_steps"] <= run.budget]
    if returns:
        record.final_metrics["intrinsic_return"] = float(np.mean(returns[-(adapter.final_window or len(returns)):]))
    record.curve = learning_curve(adapter, episodes, intrinsic, run.budget)
    record.method_metrics = dict(sink.last_metrics)
    record.inert = sink.inert_watch.note() if sink.inert_watch is not None else None
    record.overshoot = overshoot_note(run.budget, record.env_steps, run.train.batch_size)
    record.files.checkpoints = [str(p.relative_to(run_dir)) for p in list_checkpoints(run_dir)]
    if sink.parent is not None or run.init_checkpoint:
        record.parent = {"run_dir": run.parent.run_dir if run.parent else None,
                         "checkpoint": run.init_checkpoint,
                         **(sink.parent or record.parent or {})}
    stats_file = get_family(adapter.task.family).stats_file
    if stats_file is not None:  # the family's own per-episode format
        rows = [{k: e[k] for k in stats_file.keys if k in e} for e in episodes]
        rewrite_jsonl(run_dir / stats_file.name, rows)
