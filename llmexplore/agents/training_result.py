"""What training hands back: the sink that hears it as it goes, and the result at the end.

Kept apart from ``training.py`` so that the parts watching a run (``training_watch.py``) and its callers
name them without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class TrainingSink(Protocol):
    """Receives what happens during training (in the main process)."""

    def on_episode(self, row: dict[str, Any]) -> None:
        """A finished episode: return, length, the adapter's stats and ``env_steps``, the learner's count
        after the batch that trained its last step (``episode_ledger.py``)."""

    def on_intrinsic_returns(self, env_steps: int, returns: list[float]) -> None:
        """Intrinsic returns (before c_int) of the episodes of the batch that ends at ``env_steps``."""

    def on_metrics(self, env_steps: int, metrics: dict[str, float]) -> None:
        """A metrics row: mean rewards per step and the method's own figures."""

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        """Called after each training iteration, for progress displays."""

    def on_episodes_through(self, env_steps: int) -> None:
        """Every episode up to ``env_steps`` has been passed to ``on_episode``."""

    def on_parent(self, report: dict[str, Any]) -> None:
        """A fine-tuning run loaded its parent's weights: which tensors, which not, which reset."""


@dataclass
class TrainResult:
    status: str  # "complete" | "interrupted" | "failed"
    env_steps: int
    session_env_steps: int
    session_seconds: float
    #: why a failed run failed, when known (e.g. which child process died)
    error: str | None = None
