"""Progress of a training run on the terminal: a live bar, or plain lines in logs."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressView:
    """A rich progress bar on a terminal; a line every 10% of the budget otherwise."""

    def __init__(self, title: str, budget: int, start: int = 0, enabled: bool = True, stream: TextIO | None = None):
        self.title = title
        self.budget = budget
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._last_return: float | None = None
        self._next_line = start + budget // 10
        self._last_draw = 0.0
        self._bar = None
        if enabled and self.stream.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]:>8} steps/s"),
                TimeRemainingColumn(),
                TextColumn("return {task.fields[ret]}"),
                transient=False,
            )
            self._task = self._bar.add_task(title, total=budget, completed=start, rate="-", ret="-")
            self._bar.start()

    def episode_return(self, value: float) -> None:
        """Fold an episode's return into the shown running average."""
        self._last_return = value if self._last_return is None else 0.95 * self._last_return + 0.05 * value

    def update(self, env_steps: int, steps_per_second: float) -> None:
        """Move the progress bar to ``env_steps``."""
        if not self.enabled:
            return
        ret = "-" if self._last_return is None else f"{self._last_return:.2f}"
        if self._bar is not None:
            now = time.time()
            if now - self._last_draw > 0.25:
                self._last_draw = now
                self._bar.update(self._task, completed=min(env_steps, self.budget), rate=f"{steps_per_second:,.0f}", ret=ret)
        elif env_steps >= self._next_line:
            self._next_line = env_steps + max(self.budget // 10, 1)
            pct = 100.0 * env_steps / max(self.budget, 1)
            print(f"[{self.title}] {env_steps:,}/{self.budget:,} env steps ({pct:.0f}%), "
                  f"{steps_per_second:,.0f} steps/s, return {ret}", file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the progress bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
