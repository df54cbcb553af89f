"""Reward-model training on a thread of its own, beside the policy's learner.

Why: on a CPU learner in serial mode the envs and the policy update share one core, and a
gradient step of the character CNN costs about as much as a whole policy batch. Taking the
owed steps inside the learner loop (even capped by ``time_share``) slows the agent; taking
them on a second thread uses a core the serial learner leaves idle, because torch releases
the GIL while it computes. Upstream ONI also trained its reward model in a thread of the
learner process.

The thread trains the model's own network; the learner scores captions with a copy
published after every step (``OnlineRewardModel.publish``), so it never sees half-updated
weights and never waits for a step. Whoever reads or replaces the training state
(checkpoints, resume) does so inside ``paused()``, which lets the current step finish and
holds the next one back (a plain lock would not do: the thread takes it again at once, and
the learner could wait for many steps). An error on the
thread is kept and raised in the learner at its next call (``check``), so it cannot pass
unnoticed.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from llmexplore.methods.oni.schedule import TrainingSchedule


class BackgroundTrainer:
    def __init__(self, schedule: TrainingSchedule, step: Callable[[], None], publish: Callable[[], None],
                 *, name: str = "oni-reward-model"):
        self.schedule = schedule
        self._step = step
        self._publish = publish
        self._name = name
        #: held while a step runs, and inside ``paused()``
        self._lock = threading.Lock()
        self._pausers = 0
        self._stopping = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once); it then takes owed steps as the schedule announces them."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No step runs inside: the current one ends first, the next waits until the block is left."""
        with self.schedule.changed:
            self._pausers += 1
        try:
            with self._lock:
                yield
        finally:
            with self.schedule.changed:
                self._pausers -= 1
                self.schedule.changed.notify_all()

    def check(self) -> None:
        """Raise, in the caller's thread, an error the training thread ended with."""
        if self._error is not None:
            raise RuntimeError(f"the {self._name} training thread failed: {self._error!r}") from self._error

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until no step is owed (tests, and the end of training); False on timeout."""
        deadline = time.monotonic() + timeout
        with self.schedule.changed:
            while self.schedule.pending > 0 and self._error is None and self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.schedule.changed.wait(left)
        self.check()
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread after its current step (owed steps are dropped), waiting
        up to ``timeout`` seconds for it; harmless when it never started."""
        with self.schedule.changed:
            self._stopping = True
            self.schedule.changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        schedule = self.schedule
        try:
            while True:
                with schedule.changed:
                    while not self._stopping and (schedule.pending == 0 or self._pausers):
                        schedule.changed.wait()
                    if self._stopping:
                        return
                with self._lock:
                    spent = schedule.take_step(self._step)
                    self._publish()
                with schedule.changed:
                    schedule.changed.notify_all()  # for wait_idle
                if not schedule.unlimited:  # keep the thread's busy share of wall time under time_share
                    time.sleep(spent * (1.0 / schedule.time_share - 1.0))
        except BaseException as error:  # noqa: BLE001 - kept and raised in the learner by check()
            self._error = error
            with schedule.changed:
                schedule.changed.notify_all()
