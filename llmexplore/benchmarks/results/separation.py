"""Which cell of a leaderboard column is bold: the best one, and only where it is separated from the rest.

Bolding the highest mean alone would mark 1.54 ± 0.07 over 1.50 ± 0.02 though neither tends to beat
the other; the rule asks the probability of improvement instead, the comparison the tables already give.
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import pandas as pd

Better = Literal["max", "min"]

#: the note under every table with bold cells
SEPARATION_RULE = ("Bold: a column's best value, only where the interval of P(X > Y) of its method against every "
                   "other method in the table lies wholly above 0.5; nothing is bold where no method is so separated.")


def win_interval(improvements: pd.DataFrame, x: str, y: str) -> tuple[float, float]:
    """The interval of P(x > y) from a table of pairs (``x``, ``y``, ``low``, ``high``, either order);
    (nan, nan) when the pair was not compared."""
    for row in improvements.itertuples():
        if (row.x, row.y) == (x, y):
            return float(row.low), float(row.high)
        if (row.x, row.y) == (y, x):  # P(y > x) = 1 - P(x > y), so its interval turns round
            return 1.0 - float(row.high), 1.0 - float(row.low)
    return math.nan, math.nan


def separated_best(points: Sequence[float], labels: Sequence[str], better: Better,
                   improvements: pd.DataFrame | None) -> int | None:
    """The row whose point is best, if its P(X > Y) interval against every other row lies above 0.5; else None
    (a tie for best, a missing comparison or an interval reaching 0.5 is not a separation)."""
    finite = [(p, i) for i, p in enumerate(points) if not math.isnan(p)]
    if improvements is None or len(labels) < 2 or not finite:
        return None
    best_point = max(p for p, _ in finite) if better == "max" else min(p for p, _ in finite)
    best = [i for p, i in finite if p == best_point]
    if len(best) > 1:
        return None
    for other in range(len(labels)):
        if other != best[0] and not win_interval(improvements, labels[best[0]], labels[other])[0] > 0.5:
            return None
    return best[0]
