"""Which messages (NetHack) or captions (other envs) an episode kept producing, and what
the intrinsic reward paid for them.

This is how reward hacking shows: a method that pays for one message the agent can
repeat cheaply puts that message at the top, with most of the episode's intrinsic reward.
A step's rewards count for the caption of the observation the step led to, the one the
reward was computed from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import numpy as np

NO_CAPTION = "(no message)"


@dataclass
class CaptionStat:
    text: str
    count: int
    intrinsic: float
    extrinsic: float

    @property
    def intrinsic_mean(self) -> float:
        """Intrinsic reward per step spent on this caption; 0 for a row with no steps."""
        return self.intrinsic / self.count if self.count else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data with ``intrinsic_mean`` added, as episode summaries store it."""
        return {**asdict(self), "intrinsic_mean": self.intrinsic_mean}


def caption_stats(captions: Sequence[str], intrinsic: np.ndarray, extrinsic: np.ndarray) -> list[CaptionStat]:
    """One row per distinct caption, most frequent first (ties: more intrinsic reward first)."""
    if not (len(captions) == len(intrinsic) == len(extrinsic)):
        raise ValueError("captions and rewards must have one entry per step")
    table: dict[str, CaptionStat] = {}
    for text, r_int, r_ext in zip(captions, intrinsic, extrinsic):
        key = text.strip() or NO_CAPTION
        row = table.setdefault(key, CaptionStat(key, 0, 0.0, 0.0))
        row.count += 1
        row.intrinsic += float(r_int)
        row.extrinsic += float(r_ext)
    return _ordered(table.values())


def merge_stats(tables: Iterable[Iterable[CaptionStat]]) -> list[CaptionStat]:
    """Caption counts and rewards summed over several episodes."""
    merged: dict[str, CaptionStat] = {}
    for table in tables:
        for row in table:
            into = merged.setdefault(row.text, CaptionStat(row.text, 0, 0.0, 0.0))
            into.count += row.count
            into.intrinsic += row.intrinsic
            into.extrinsic += row.extrinsic
    return _ordered(merged.values())


def from_dicts(rows: Iterable[dict[str, Any]]) -> list[CaptionStat]:
    """Rows back from ``to_dict`` output, in the order given; ``intrinsic_mean`` is recomputed, not read."""
    return [CaptionStat(r["text"], int(r["count"]), float(r["intrinsic"]), float(r["extrinsic"])) for r in rows]


def _ordered(rows: Iterable[CaptionStat]) -> list[CaptionStat]:
    return sorted(rows, key=lambda r: (-r.count, -r.intrinsic, r.text))
