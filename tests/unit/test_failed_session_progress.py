"""A session that trained and then raised keeps the progress its last heartbeat recorded: its record
never falls below a heartbeat written earlier, and the steps it trained count in steps/s."""

from __future__ import annotations

import pytest

from llmexplore.benchmarks.run import cell as cell_module
from llmexplore.benchmarks.run.record import read_record
from llmexplore.benchmarks.run.spec import RunSpec


@pytest.mark.parametrize("error, status", [(RuntimeError, "failed"), (KeyboardInterrupt, "interrupted")])
def test_a_failed_session_ends_at_its_last_heartbeat(tmp_path, monkeypatch, error, status):
    beats: list[int] = []

    def train(run, run_dir, sink, resume_steps, quiet):
        """Progress to the sink (a heartbeat at the first step, none 512 steps later), then an error."""
        sink.on_progress(resume_steps + 512, 100.0)
        beats.append(read_record(run_dir).env_steps)
        sink.on_progress(resume_steps + 1024, 100.0)  # within HEARTBEAT_SEC: no heartbeat
        raise error("the learner stopped")

    monkeypatch.setattr(cell_module, "_train", train)
    spec = RunSpec(method="none", task="crafter:reward-free", steps=4096,
                   train={"envs_per_worker": 8, "batch_size": 512})
    with pytest.raises(error):
        cell_module.run_cell(spec, tmp_path, quiet=True)
    assert beats == [512]  # the heartbeat the session wrote while training
    record = read_record(tmp_path)
    assert record.status == status and record.env_steps == 512
    assert [(s.env_steps_start, s.env_steps_end, s.status) for s in record.sessions] == [(0, 512, status)]
    assert record.steps_per_second is not None and record.steps_per_second > 0


def test_a_session_that_fails_while_finishing_is_listed_once(tmp_path, monkeypatch):
    """Finishing closes the session, then writing the final metrics raises: the record lists the session
    once, as failed, at the steps training returned."""
    from llmexplore.agents.training import TrainResult

    def train(run, run_dir, sink, resume_steps, quiet):
        return TrainResult(status="complete", env_steps=4096, session_env_steps=4096, session_seconds=10.0)

    def finalize(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(cell_module, "_train", train)
    monkeypatch.setattr(cell_module, "_finalize", finalize)
    spec = RunSpec(method="none", task="crafter:reward-free", steps=4096,
                   train={"envs_per_worker": 8, "batch_size": 512})
    with pytest.raises(OSError):
        cell_module.run_cell(spec, tmp_path, quiet=True)
    record = read_record(tmp_path)
    assert record.status == "failed" and record.env_steps == 4096 and record.finished_at is None
    assert [(s.env_steps_start, s.env_steps_end, s.status) for s in record.sessions] == [(0, 4096, "failed")]
