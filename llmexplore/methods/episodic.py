"""Following each env through learner batches, for methods whose reward depends on the episode so far.

Why: E3B's covariance and NovelD's first-visit indicator are episodic: they are reset when an episode
starts and grow with every step of it. A learner batch holds a fixed number of steps per env, so an
episode spans several batches, and one batch may hold two consecutive trajectories of the same env.
The learner's ``env_uid`` observation names the env of each row; rows are grouped into *rounds* with
at most one row per env, in batch order, so a method can update per-env state for a whole round at
once and still see each env's steps in time order. Batches without ``env_uid`` (evaluation replays)
treat every row as an episode of its own whose state is not kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from llmexplore.envs.base import ENV_UID_KEY

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.methods.base import RewardBatch


def row_envs(batch: RewardBatch) -> np.ndarray | None:
    """[N] int64 env uids of the batch's rows, or None where the batch does not carry them."""
    uid = batch.obs.get(ENV_UID_KEY)
    if uid is None:
        return None
    return uid[:, 0].reshape(uid.shape[0], -1)[:, 0].cpu().numpy().astype(np.int64)


def rounds(uids: np.ndarray | None, rows: int) -> list[np.ndarray]:
    """Row indices in rounds: round k holds the k-th row of each env, in batch order.

    >>> [r.tolist() for r in rounds(np.array([7, 8, 7, 9, 8]), 5)]
    [[0, 1, 3], [2, 4]]
    """
    if uids is None:
        return [np.arange(rows)]
    seen: dict[int, int] = {}
    occurrence = np.empty(rows, dtype=np.int64)
    for row, uid in enumerate(uids.tolist()):
        occurrence[row] = seen.get(uid, 0)
        seen[uid] = occurrence[row] + 1
    return [np.flatnonzero(occurrence == k) for k in range(int(occurrence.max(initial=-1)) + 1)]
