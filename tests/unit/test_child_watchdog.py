"""A run whose child process dies fails within seconds, naming the process (issue 37, class 8).

sample-factory's runner waited for good when a child died at start (11 minutes, no message). The
watchdog runs in the runner's event loop (a real signal_slot loop here) and watches real processes.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time

from signal_slot.signal_slot import EventLoop

from llmexplore.agents.watchdog import ChildWatchdog, describe_exit, last_log_lines
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


def _logs_then_dies(log_file: str) -> None:
    """As a rollout worker does: sample-factory's logger into the run's sf_log.txt, a traceback, exit 1."""
    from sample_factory.utils.utils import log

    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter(fmt="[%(asctime)s][%(process)05d] %(message)s"))
    log.addHandler(handler)
    log.info("Decorrelating experience for 64 frames...")
    try:
        raise ValueError("setting an array element with a sequence.")
    except ValueError:
        log.exception("EvtLoop [rollout_proc0_evt_loop] unhandled exception in slot='init'")
    os._exit(1)


def test_a_child_dead_before_training_is_reported_with_its_exit_code_and_its_last_log_lines(tmp_path):
    log_file = tmp_path / "sf_log.txt"
    log_file.write_text("[2026-11-28 01:00:00,000][00001] Starting all processes...\n")  # another process's line
    ctx = multiprocessing.get_context("spawn")
    dying = ctx.Process(target=_logs_then_dies, args=(str(log_file),), name="rollout_proc0")
    loop = EventLoop("runner_evt_loop")
    failures: list[str] = []
    ChildWatchdog(loop, lambda: [dying], lambda message: (failures.append(message), loop.stop()), period=0.2,
                  log_files=lambda: [log_file])
    dying.start()
    loop.exec()
    assert time.time() - log_file.stat().st_mtime < 5  # reported within seconds of its last log line
    message = failures[0]
    assert message.startswith(f"sample-factory's process rollout_proc0 (pid {dying.pid}) exited with code 1")
    assert f"its last lines in {tmp_path.name}/sf_log.txt" in message
    assert "Decorrelating experience" in message and "ValueError: setting an array element" in message
    assert "Traceback (most recent call last)" in message and "Starting all processes" not in message


def test_log_lines_are_picked_by_process_and_a_signal_is_named(tmp_path):
    log_file = tmp_path / "sf_log.txt"
    log_file.write_text("[t][00042] first\nTraceback (most recent call last):\n  File x\n"
                        "\x1b[1;35mValueError\x1b[0m: \x1b[35mbad\x1b[0m\n"  # as Python 3.13 colours it
                        "[t][00007] someone else\n[t][00042] last\n")
    assert last_log_lines(log_file, 42) == ["[t][00042] first", "Traceback (most recent call last):", "  File x",
                                            "ValueError: bad", "[t][00042] last"]
    assert last_log_lines(log_file, 42, count=1) == ["[t][00042] last"]
    assert last_log_lines(tmp_path / "missing.txt", 42) == []
    assert describe_exit(-9).startswith("was killed by SIGKILL") and describe_exit(3) == "exited with code 3"


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


def test_the_log_files_are_the_ones_sample_factorys_logger_writes(tmp_path):
    from sample_factory.utils.utils import log

    from llmexplore.agents.watchdog import sample_factory_log_files

    handler = logging.FileHandler(tmp_path / "sf_log.txt")  # as sample-factory's init_file_logger adds it
    log.addHandler(handler)
    try:
        assert tmp_path / "sf_log.txt" in sample_factory_log_files()
    finally:
        log.removeHandler(handler)
        handler.close()
    assert tmp_path / "sf_log.txt" not in sample_factory_log_files()
