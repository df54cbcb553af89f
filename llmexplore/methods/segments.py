"""Sums of a per-step value over segments of each env's steps (episodes, skill activations).

Why: a learner batch holds a fixed number of steps per env, so an episode or a skill's
activation usually starts in one batch and ends in a later one. ``SegmentSums`` carries the
open segment's partial sum per env (keyed by the env's uid) from batch to batch and returns
each segment's total once its last step arrives.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping

import numpy as np


class SegmentSums:
    def __init__(self) -> None:
        self.partial: dict[int, float] = defaultdict(float)

    def add(self, uids: np.ndarray, values: np.ndarray, ends: np.ndarray) -> list[tuple[int, int, float]]:
        """values, ends: [N, T]; ends[n, t] != 0 where a segment ends with step t of row n.

        Returns (row, t, total) for every segment that ended in this batch, in row order.
        """
        finished: list[tuple[int, int, float]] = []
        for row, (uid, row_values, row_ends) in enumerate(zip(uids, values, ends)):
            acc = self.partial[int(uid)]
            start = 0
            for end in np.flatnonzero(row_ends):
                finished.append((row, int(end), acc + float(row_values[start:end + 1].sum())))
                acc, start = 0.0, end + 1
            self.partial[int(uid)] = acc + float(row_values[start:].sum())
        return finished

    def state_dict(self) -> dict[str, Any]:
        """The open segments' partial sums, for checkpoints."""
        return {"partial": dict(self.partial)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the partial sums ``state_dict`` saved."""
        self.partial = defaultdict(float, {int(k): float(v) for k, v in state.get("partial", {}).items()})
