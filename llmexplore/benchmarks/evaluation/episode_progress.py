"""Progress of jobs made of episodes (evaluation, visualization) on the terminal.

A rich bar on a terminal; in logs and pipes one plain line per finished episode, so a
long job still shows it is alive.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class EpisodeProgress:
    def __init__(self, title: str, total: int, enabled: bool = True, stream: TextIO | None = None):
        self.title = title
        self.total = total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self.steps = 0
        self.started = time.time()
        self._bar = None
        if enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("episodes  {task.fields[rate]} steps/s"), TimeRemainingColumn(),
                TextColumn("{task.fields[last]}"), console=Console(file=self.stream),
            )
            self._task = self._bar.add_task(title, total=total, rate="-", last="")
            self._bar.start()

    def episode(self, seed: int, length: int, summary: str = "") -> None:
        """Count one finished episode of ``length`` steps: on the bar on a terminal, as one line otherwise,
        not shown when disabled (still counted)."""
        self.done += 1
        self.steps += length
        if not self.enabled:
            return
        rate = f"{self.steps / max(time.time() - self.started, 1e-6):,.0f}"
        last = f"seed {seed}: {length} steps {summary}".strip()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=rate, last=last)
        else:
            print(f"[{self.title}] {self.done}/{self.total} episodes, {rate} steps/s; {last}", file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the live bar; harmless without one, or when called twice."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
