"""A run whose child process dies fails within seconds, naming the process (issue 37, class 8).

sample-factory's runner waited for good when a child died at start (11 minutes, no message). The
watchdog runs in the runner's event loop (a real signal_slot loop here) and watches real processes.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

from signal_slot.signal_slot import EventLoop

from llmexplore.agents.watchdog import ChildWatchdog
from llmexplore.benchmarks.run.cell_record import close_session
from llmexplore.benchmarks.run.record import RunRecord, Session


def _dies_at_start() -> None:
    print("RuntimeError: the run folder is locked by another process", file=sys.stderr)
    os._exit(3)


def test_a_dead_child_fails_the_run_within_seconds_and_the_others_are_stopped():
    ctx = multiprocessing.get_context("spawn")
    dying = ctx.Process(target=_dies_at_start, name="rollout_proc0")
    waiting = ctx.Process(target=time.sleep, args=(120,), name="learner_proc0")
    loop = EventLoop("runner_evt_loop")
    failures: list[str] = []

    def fail(message: str) -> None:
        failures.append(message)
        loop.stop()

    watchdog = ChildWatchdog(loop, lambda: [dying, waiting], fail, period=0.2)
    waiting.start()
    dying.start()
    started = time.monotonic()
    loop.exec()  # without the watchdog, nothing would end this loop
    seconds = time.monotonic() - started
    waiting.join(10)
    assert seconds < 10, seconds
    assert failures == [watchdog.failure]
    assert "rollout_proc0" in failures[0] and "exited with code 3" in failures[0]
    assert not waiting.is_alive()


def test_children_exiting_after_a_stop_are_not_a_failure():
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Process(target=time.sleep, args=(0,), name="rollout_proc0")
    done.start()
    done.join()
    watchdog = ChildWatchdog(EventLoop("runner_evt_loop"), lambda: [done], lambda m: None)
    watchdog.stopping = True
    watchdog.check()
    assert watchdog.failure is None


def test_a_session_that_trained_nothing_does_not_lower_steps_per_second():
    record = RunRecord(status="running", cell="none/crafter:reward/seed0", spec={"method": "none", "task": "crafter:reward", "seed": 0}, environment={},
                       started_at="t0", updated_at="t0", budget=4096, env_steps=0, wall_seconds=0.0,
                       steps_per_second=None, metric="score")
    record.sessions = [Session(started_at="t-1", seconds=660.0, env_steps_start=0, env_steps_end=0,
                               status="failed")]  # a child died at start and the parent waited
    record.status = "complete"
    close_session(record, "t0", 10.0, 0, 4096)
    assert record.wall_seconds == 670.0 and record.steps_per_second == 409.6
