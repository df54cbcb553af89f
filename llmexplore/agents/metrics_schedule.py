"""When the learner writes a row of training metrics: a cadence in env steps, never in seconds.

A row's existence and its env step must depend on the command alone (budget, batch size,
cadence), not on how fast the machine was, so two runs of the same command can be compared row
for row and a test of a training outcome holds on fast and slow machines alike. The learner
asks after every training batch; a row is due when the learner's step count has crossed the
next multiple of the cadence, and once more when training reaches its budget.
"""

from __future__ import annotations

#: rows a run gets by default, whatever its budget: a usable curve for a 10k-step test and a 1B-step run
DEFAULT_METRICS_ROWS = 100


def default_metrics_every(budget: int) -> int:
    """The default cadence: about ``DEFAULT_METRICS_ROWS`` rows over the budget."""
    return max(int(budget) // DEFAULT_METRICS_ROWS, 1)


class MetricsSchedule:
    """Decides, from env steps alone, whether the batch just trained ends with a metrics row."""

    def __init__(self, every: int, budget: int, start_steps: int = 0):
        if every < 1:
            raise ValueError(f"metrics cadence must be at least 1 env step, got {every}")
        self.every = int(every)
        self.budget = int(budget)
        self._next = self._boundary_after(start_steps)
        #: whether the row at the budget was written: batches trained past it get no rows of their own
        self.final_written = False

    def _boundary_after(self, steps: int) -> int:
        return (steps // self.every + 1) * self.every

    def due(self, env_steps: int) -> bool:
        """True when a row belongs at ``env_steps`` (call once per trained batch, in step order)."""
        if self.final_written:
            return False
        final = env_steps >= self.budget
        crossed = env_steps >= self._next
        if crossed:
            self._next = self._boundary_after(env_steps)
        if final:
            self.final_written = True
        return crossed or final

    def restart_from(self, env_steps: int) -> None:
        """After loading a checkpoint: the next row is at the first boundary past its step."""
        self._next = self._boundary_after(env_steps)
        self.final_written = env_steps >= self.budget
