"""A checkpoint counts as a resume point only once the episodes up to it are on disk (issue 37, class 7).

A process stopped right after a checkpoint (Ctrl-C saves one) may not yet have written the episodes of
its last batches; resuming from that checkpoint skipped them for good (a cell once resumed as
"complete" with an empty episode log). The sink records how far the episode log is complete, after the
rows; on resume a checkpoint past that point is set aside (kept) and the run resumes from an earlier one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from llmexplore.atomic import read_jsonl
from llmexplore.benchmarks.run.cell import (AHEAD_PREFIX, EPISODES_THROUGH_FILE, CellSink, _resume_point,
                                            _trim_logs, episodes_through)
from llmexplore.benchmarks.run.progress import ProgressView
from llmexplore.benchmarks.run.record import RunFiles


def _sink(run_dir: Path, start_steps: int = 0) -> CellSink:
    view = ProgressView("none/crafter:reward/seed0", 4096, start=start_steps, enabled=False)
    return CellSink(run_dir, RunFiles(), view, heartbeat=lambda steps: None, start_steps=start_steps)


def _checkpoint(run_dir: Path, steps: int) -> Path:
    path = run_dir / "sf" / "checkpoint_p0" / f"checkpoint_{steps // 512:09d}_{steps}.pth"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": {"w": torch.zeros(1)}, "env_steps": steps}, path)
    return path


def _stopped_run(run_dir: Path) -> None:
    """What a process stopped right after its 2,048-step checkpoint leaves: the episodes of the batches
    up to 1,024 reached the log, those of the last batch never arrived."""
    sink = _sink(run_dir)
    for steps in (300, 700, 1024):
        sink.on_episode({"return": 1.0, "length": 100, "env_steps": steps})
        sink.on_episodes_through(steps)
    sink.on_episodes_through(512)  # a late, lower count never moves the mark back
    sink.close()
    _checkpoint(run_dir, 1024)
    _checkpoint(run_dir, 2048)


def test_the_sink_marks_the_episode_log_complete_only_after_writing_the_rows(tmp_path):
    _stopped_run(tmp_path)
    assert episodes_through(tmp_path) == 1024
    assert [r["env_steps"] for r in read_jsonl(tmp_path / "episodes.jsonl")] == [300, 700, 1024]
    _sink(tmp_path / "fresh", start_steps=0).close()  # a new session starts from what its resume kept
    assert episodes_through(tmp_path / "fresh") == 0


def test_a_checkpoint_ahead_of_the_episodes_on_disk_is_not_a_resume_point(tmp_path, capsys):
    _stopped_run(tmp_path)
    resume = _resume_point(tmp_path)
    assert resume == 1024
    err = capsys.readouterr().err
    assert "is ahead of the episodes on disk (through 1,024)" in err and "resuming from checkpoint_" in err
    aside = tmp_path / "sf" / "checkpoint_p0" / f"{AHEAD_PREFIX}checkpoint_000000004_2048.pth"
    assert aside.exists()  # kept, not deleted, and not listed where sample-factory looks
    _trim_logs(tmp_path, RunFiles(), resume)
    assert [r["env_steps"] for r in read_jsonl(tmp_path / "episodes.jsonl")] == [300, 700, 1024]  # none lost


@pytest.mark.parametrize("text", [None, "", "{\"env_steps\": -5}", "[1]"])
def test_an_old_or_damaged_mark(tmp_path, text):
    _checkpoint(tmp_path, 1024)
    if text is not None:
        (tmp_path / EPISODES_THROUGH_FILE).write_text(text)
    # no mark: a folder of an earlier version, taken as it is; a damaged mark: nothing is covered
    assert _resume_point(tmp_path) == (1024 if text is None else 0)
    assert len(list((tmp_path / "sf" / "checkpoint_p0").iterdir())) == 1



def test_a_resume_keeps_the_sessions_progress_to_the_checkpoint_it_wrote():
    """A killed session's last heartbeat is up to ten seconds old; the checkpoint this resume starts from
    shows it got further (issue 49: a killed session's end step was stale)."""
    from llmexplore.benchmarks.run.cell_record import earlier_sessions
    from llmexplore.benchmarks.run.record import RunRecord, Session

    sessions = [Session(started_at="t0", seconds=5.0, env_steps_start=0, env_steps_end=1024, status="killed"),
                Session(started_at="t1", seconds=9.0, env_steps_start=1024, env_steps_end=2048, status="running")]
    record = RunRecord(status="running", cell="rnd/crafter:reward-free/seed2", spec={"method": "rnd", "task": "crafter:reward-free", "seed": 2},
                       environment={}, started_at="t0", updated_at="t1", budget=8192, env_steps=2048,
                       wall_seconds=14.0, steps_per_second=None, metric="score", sessions=sessions)
    earlier = earlier_sessions(record, resume_steps=3072)
    assert [(s.env_steps_end, s.status) for s in earlier] == [(1024, "killed"), (3072, "killed")]
    # a resume from before the session began (its checkpoints set aside) says nothing more of it
    assert [s.env_steps_end for s in earlier_sessions(record, resume_steps=1024)] == [1024, 2048]
