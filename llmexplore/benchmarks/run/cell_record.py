"""The parts of a cell's run record (``record.py``) that its sessions build: the record a session starts
with, the sessions of earlier processes, a session's end, and the learning curve."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from llmexplore.benchmarks.run.artefacts import run_artefacts
from llmexplore.benchmarks.run.provenance import environment_info
from llmexplore.benchmarks.run.record import CurvePoint, RunFiles, RunRecord, Session
from llmexplore.benchmarks.run.spec import ResolvedRun, cell_id
from llmexplore.envs import EnvAdapter
from llmexplore.methods.registry import get_method

CURVE_BINS = 20


def utc_now() -> str:
    """Now, in UTC and ISO 8601 to the second: how run records write every time."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_record(run: ResolvedRun, adapter: EnvAdapter, files: RunFiles, started_at: str,
                 previous: RunRecord | None, sessions: list[Session], resume_steps: int) -> RunRecord:
    """The record a session starts with: status running, the run's spec and environment, the earlier
    sessions (and the started time of the first)."""
    environment = environment_info(adapter, run.train)
    artefacts = run_artefacts(run)
    if artefacts:
        environment["artefacts"] = artefacts
    if run.lm.backend == "oracle" and get_method(run.method).uses_lm:  # the stand-in's rules are part of the row
        from llmexplore.lm.oracle import ORACLE_VERSION

        environment["oracle_rules_version"] = ORACLE_VERSION
    return RunRecord(
        status="running",
        cell=cell_id(run),
        spec=run.spec_dict(),
        environment=environment,
        started_at=previous.started_at if previous else started_at,
        updated_at=started_at,
        budget=run.budget,
        env_steps=resume_steps,
        wall_seconds=sum(s.seconds for s in sessions),
        steps_per_second=None,
        sessions=sessions,
        metric=adapter.metric,
        files=files,
        parent=previous.parent if previous else None,
    )


def earlier_sessions(previous: RunRecord | None, resume_steps: int) -> list[Session]:
    """Sessions of earlier processes. One still marked running was killed: its last heartbeat
    shows how far it got, or the checkpoint it wrote that this resume starts from when that is further
    (a heartbeat is up to ``cell.HEARTBEAT_SEC`` old when the kill comes); the next session restarts from
    the last checkpoint, so the overlap is work done twice (counted in steps/s, which measures
    throughput)."""
    if previous is None:
        return []
    out = []
    for session in previous.sessions:
        if session.status == "running":
            reached = session.env_steps_end
            if session.env_steps_start < resume_steps:
                reached = max(reached, resume_steps)
            session = session.model_copy(update={"status": "killed", "env_steps_end": reached})
        out.append(session)
    return out


def close_session(record: RunRecord, started_at: str, seconds: float, start_steps: int, end_steps: int,
                  environment: dict[str, Any] | None = None) -> None:
    """End the record's session that started at ``started_at`` with the record's status, and update the
    totals (steps/s counts only the sessions that trained)."""
    record.sessions = [s for s in record.sessions if not (s.status == "running" and s.started_at == started_at)]
    record.sessions.append(Session(started_at=started_at, seconds=round(seconds, 3), env_steps_start=start_steps,
                                   env_steps_end=end_steps, status=record.status, environment=environment))
    record.env_steps = end_steps
    record.wall_seconds = round(sum(s.seconds for s in record.sessions), 3)
    trained = sum(s.env_steps_end - s.env_steps_start for s in record.sessions)
    # sessions that trained nothing (a child died at start, a stall) are in wall_seconds, not in steps/s
    training = sum(s.seconds for s in record.sessions if s.env_steps_end > s.env_steps_start)
    record.steps_per_second = round(trained / training, 1) if training > 0 else None
    record.updated_at = utc_now()
    if record.status == "complete":
        record.finished_at = record.updated_at


def learning_curve(adapter, episodes: Sequence[dict], intrinsic: Sequence[dict], budget: int,
                   bins: int = CURVE_BINS) -> list[CurvePoint]:
    """``bins`` equal spans of the budget, each with the episodes that ended in it and their mean return,
    intrinsic return and metric; spans where nothing ended are left out, as is anything past the budget."""
    edges = np.linspace(0, budget, bins + 1)
    points = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = [e for e in episodes if lo < e.get("env_steps", 0) <= hi]
        intr = [r["intrinsic_return"] for r in intrinsic if lo < r["env_steps"] <= hi]
        if not in_bin and not intr:
            continue
        metric = adapter.summarize(in_bin).get(adapter.metric) if in_bin else None
        points.append(CurvePoint(
            env_steps=int(hi),
            episodes=len(in_bin),
            episode_return=float(np.mean([e["return"] for e in in_bin])) if in_bin else None,
            intrinsic_return=float(np.mean(intr)) if intr else None,
            metric=None if metric is None or np.isnan(metric) else float(metric),
        ))
    return points
