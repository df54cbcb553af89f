"""Ctrl-C and SIGTERM stop a run at its next training step, after a checkpoint.

Raising KeyboardInterrupt inside sample-factory's event loop ends it at once: the learner's
save on stop never runs, so a run interrupted before its first periodic save (60 s by default)
kept nothing. Here the first SIGINT or SIGTERM only asks for a stop; ``StopObserver`` sees the
request at the next training step and stops training the way reaching the budget does, which
saves a checkpoint. A second SIGINT after a SIGINT (the user insisting) raises KeyboardInterrupt
as before; any other repeat is ignored (a launcher's SIGINT and a scheduler's SIGTERM may both
arrive for one stop, and the second must not break the save).
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

_requested: str | None = None
_requested_at = 0.0
#: whether the training loop runs now; outside it (building envs, checking an LM server, writing the
#: record) nothing would see a request, so the first signal interrupts at once, as it always did
_training = False


def stop_requested() -> str | None:
    """The name of the signal that asked this process to stop, if one did."""
    return _requested


def request_stop(name: str) -> None:
    """Remember the first stop request (later ones change nothing) and tell the user on stderr that a
    checkpoint comes at the next training step."""
    global _requested, _requested_at
    if _requested is None:
        _requested, _requested_at = name, time.monotonic()
        print(f"llmexplore: {name}: stopping after a checkpoint at the next training step "
              "(Ctrl-C again to stop at once, without one)", file=sys.stderr, flush=True)


def install() -> None:
    """Handle SIGINT and SIGTERM as stop requests (main thread only, like any signal handler)."""

    def on_sigint(signum: int, frame: object) -> None:
        if _requested == "SIGINT" or (not _training and _requested is None):
            request_stop_quietly("SIGINT")
            raise KeyboardInterrupt  # Ctrl-C twice, or outside training: stop now
        request_stop("SIGINT")

    def on_sigterm(signum: int, frame: object) -> None:
        if not _training and _requested is None:
            request_stop_quietly("SIGTERM")
            raise KeyboardInterrupt
        request_stop("SIGTERM")

    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, on_sigterm)


def request_stop_quietly(name: str) -> None:
    """Remember the signal without the training-step message (it interrupts at once)."""
    global _requested, _requested_at
    if _requested is None:
        _requested, _requested_at = name, time.monotonic()


@contextmanager
def training_loop() -> Iterator[None]:
    """While the body runs, a first SIGINT or SIGTERM is a request the stop observer acts on."""
    global _training
    _training = True
    try:
        yield
    finally:
        _training = False


def reset() -> None:
    """Forget a request (tests, and a process that goes on after a stopped run)."""
    global _requested
    _requested = None


def stop_observer() -> Any:
    """A sample-factory observer that stops training, with a checkpoint, once a stop is requested."""
    from sample_factory.algo.runners.runner import AlgoObserver

    from llmexplore.agents.sf_private import stop_training

    class StopObserver(AlgoObserver):
        def on_training_step(self, runner: Any, training_iteration_since_resume: int) -> None:
            if _requested is not None and not runner.stopped:
                stop_training(runner)  # saves the policy, then stops every component

    return StopObserver()
