"""Stop requests (issue 28): while training runs, the first SIGINT or SIGTERM only asks for a
checkpointed stop; outside the training loop it interrupts at once, since nothing would see a request."""

from __future__ import annotations

import signal

import pytest

from llmexplore.agents import stop_requests


@pytest.fixture
def handlers():
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stop_requests.reset()
    stop_requests.install()
    with stop_requests.training_loop():
        yield
    stop_requests.reset()
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])


def _send(sig: int) -> None:
    signal.raise_signal(sig)  # the Python handler has run when this returns


def test_ctrl_c_twice_stops_at_once(handlers, capsys):
    _send(signal.SIGINT)
    assert stop_requests.stop_requested() == "SIGINT"
    assert "stopping after a checkpoint" in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):
        _send(signal.SIGINT)


def test_a_scheduler_stop_and_a_launcher_stop_do_not_break_the_save(handlers):
    _send(signal.SIGTERM)
    _send(signal.SIGINT)  # the launcher's SIGINT after the scheduler's SIGTERM: ignored
    _send(signal.SIGTERM)
    assert stop_requests.stop_requested() == "SIGTERM"


def test_the_observer_stops_training_once_asked(handlers):
    class Runner:
        stopped = False
        calls = 0

        def _stop_training(self):
            self.calls += 1
            self.stopped = True

    runner, observer = Runner(), stop_requests.stop_observer()
    observer.on_training_step(runner, 1)
    assert runner.calls == 0
    stop_requests.request_stop("SIGTERM")
    observer.on_training_step(runner, 2)
    observer.on_training_step(runner, 3)
    assert runner.calls == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_outside_the_training_loop_the_first_signal_interrupts_at_once(sig):
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stop_requests.reset()
    stop_requests.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            _send(sig)
        _send(signal.SIGTERM)  # a second stop signal (SLURM's after the launcher's) is ignored
    finally:
        stop_requests.reset()
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])
