"""When ONI's reward models train: the published schedule, with a wall-time budget.

Published (ONI's learner): whenever new labels arrive while fewer than 25,000 labels exist,
the reward model takes 32 gradient steps; from 25,000 labels on it takes one step per
training batch instead. Upstream the 32-step bursts ran in the learner's main loop while
the policy trained in another thread, so labels arriving during a burst were merged into
the next one; here too, arrivals while steps are still owed do not add more (``pending``
is raised to 32, not increased by 32).

Where we differ, and why: a step of the character CNN on 256 captions costs about a
quarter of a second on one CPU core, as much as a whole 2,048-step learner batch of
NetHack. Run synchronously, the published schedule would cut training speed several
times over on a CPU. ``time_share`` therefore caps the share of wall time reward-model
training may take (a token bucket: owed steps wait until the budget allows them); the
steps and their order are the published ones, only their timing moves. With
``time_share >= 1`` (the default on a GPU learner) every owed step runs at once, as
published.

The schedule is shared between the learner, which owes steps (``on_new_labels``,
``on_batch``), and, when the model trains on a thread of its own (``background.py``), that
thread, which takes them one at a time (``take_step``); ``changed`` guards the counters and
wakes the thread.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping


class TrainingSchedule:
    def __init__(self, *, burst_steps: int = 32, burst_until: int = 25_000, steps_per_batch: int = 1,
                 time_share: float = 1.0, max_credit_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.burst_steps = burst_steps
        self.burst_until = burst_until
        self.steps_per_batch = steps_per_batch
        self.time_share = time_share
        self.max_credit_s = max_credit_s
        self.clock = clock
        #: gradient steps owed, and taken so far
        self.pending = 0
        self.steps_done = 0
        #: seconds spent training, for the measured share
        self.seconds = 0.0
        self._credit = 0.0
        self._last = clock()
        self.changed = threading.Condition()

    @property
    def unlimited(self) -> bool:
        """Whether no time budget applies (``time_share`` >= 1): owed steps all run at once."""
        return self.time_share >= 1.0

    def on_new_labels(self, total_labels: int) -> None:
        """New labels arrived; ``total_labels`` counts the usable labels now held."""
        if total_labels < self.burst_until:
            with self.changed:
                self.pending = max(self.pending, self.burst_steps)
                self.changed.notify_all()

    def on_batch(self, total_labels: int) -> None:
        """One policy training batch went by."""
        if total_labels >= self.burst_until:
            with self.changed:
                self.pending = max(self.pending, self.steps_per_batch)
                self.changed.notify_all()

    def run(self, step: Callable[[], Any]) -> int:
        """Take the owed steps the time budget allows now; returns how many ran."""
        now = self.clock()
        if not self.unlimited:
            self._credit = min(self._credit + self.time_share * (now - self._last), self.time_share * self.max_credit_s)
        self._last = now
        ran = 0
        while self.pending > 0 and (self.unlimited or self._credit > 0):
            spent = self.take_step(step)
            if not self.unlimited:
                self._credit -= spent
            ran += 1
        return ran

    def take_step(self, step: Callable[[], Any]) -> float:
        """Take one owed step now, whatever the budget; returns the seconds it took."""
        began = self.clock()
        step()
        spent = self.clock() - began
        with self.changed:
            self.seconds += spent
            self.pending = max(self.pending - 1, 0)  # steps owed meanwhile merged into this one
            self.steps_done += 1
        return spent

    def state_dict(self) -> dict[str, Any]:
        """Steps owed and taken; the time budget starts afresh on resume."""
        return {"pending": self.pending, "steps_done": self.steps_done}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore steps owed and taken, and wake a waiting training thread."""
        with self.changed:
            self.pending = int(state.get("pending", 0))
            self.steps_done = int(state.get("steps_done", 0))
            self.changed.notify_all()
