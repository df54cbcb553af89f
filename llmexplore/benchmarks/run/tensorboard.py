"""The run's own TensorBoard scalars, beside sample-factory's, keyed by env steps.

sample-factory's learner writes its summaries to ``<run>/sf/.summary/0``; this writer adds
event files to the same folder (so one TensorBoard log directory shows both) with:
the intrinsic reward per env step and per episode, the episode return, the benchmark metric
(Crafter score, NetHack progression, Housekeep success) over the latest episodes, and the
method's own metrics. The writer opens on the first event; with W&B on, each scalar is also logged
through wandb (``agents/wandb_run.py``).
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path
from typing import Any

from llmexplore.agents.checkpoints import sf_experiment_dir

#: episodes the benchmark metric is computed over, and how often (in episodes) it is written
METRIC_WINDOW = 100
METRIC_EVERY = 10


def summary_dir(run_dir: str | Path) -> Path:
    """sample-factory's summary folder of policy 0: where TensorBoard should look."""
    return sf_experiment_dir(run_dir) / ".summary" / "0"


class RunBoard:
    """Writes the run's scalars to TensorBoard; every value is keyed by the learner's env steps."""

    def __init__(self, run_dir: str | Path, adapter: Any):
        self.folder = summary_dir(run_dir)
        self.adapter = adapter
        self.window: deque[dict[str, Any]] = deque(maxlen=METRIC_WINDOW)
        self._writer = None
        self._since_metric = 0
        self._last_steps = 0

    @property
    def writer(self):
        """The run's TensorBoard writer, opened on first use."""
        if self._writer is None:
            from tensorboardX import SummaryWriter

            self.folder.mkdir(parents=True, exist_ok=True)
            self._writer = SummaryWriter(str(self.folder), filename_suffix=".llmexplore", flush_secs=30)
        return self._writer

    def episode(self, row: dict[str, Any]) -> None:
        """Log an episode's return, and the benchmark metric over the recent episodes when due."""
        steps = int(row.get("env_steps", self._last_steps))
        self._last_steps = steps
        self.writer.add_scalar("llmexplore/episode_return", float(row.get("return", 0.0)), steps)
        self.window.append(row)
        self._since_metric += 1
        if self._since_metric >= METRIC_EVERY:
            self._write_metric(steps)

    def intrinsic_returns(self, env_steps: int, returns: list[float]) -> None:
        """Log each finished episode's intrinsic return."""
        for value in returns:
            self.writer.add_scalar("llmexplore/intrinsic_return_per_episode", float(value), env_steps)

    def metrics(self, env_steps: int, metrics: dict[str, float]) -> None:
        """Log a metrics row: rewards per step and the method's figures."""
        if "reward_int_mean" in metrics:
            self.writer.add_scalar("llmexplore/intrinsic_reward_per_step", metrics["reward_int_mean"], env_steps)
        if "reward_ext_mean" in metrics:
            self.writer.add_scalar("llmexplore/extrinsic_reward_per_step", metrics["reward_ext_mean"], env_steps)
        for key, value in metrics.items():
            if key not in ("reward_int_mean", "reward_ext_mean"):
                self.writer.add_scalar(f"method/{key}", float(value), env_steps)

    def _write_metric(self, steps: int) -> None:
        self._since_metric = 0
        summary = self.adapter.summarize(list(self.window))
        value = summary.get(self.adapter.metric)
        if value is not None and not math.isnan(value):
            self.writer.add_scalar(f"benchmark/{self.adapter.metric}", float(value), steps)

    def close(self) -> None:
        """Log the last metric row if one is due, and close the writer."""
        if self.window and self._since_metric:
            self._write_metric(self._last_steps)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
