"""Whether a method contributed anything to its run: a row is a claim, and a method whose intrinsic
reward never varied (identically zero, or one constant) trained exactly as ``none`` would.

The learner writes the smallest and largest intrinsic reward of each stretch into its metrics rows
(``reward_int_min``, ``reward_int_max``). A run with c_int > 0 whose rows all show one and the same value
is inert: the console says so once the first ``WARN_SHARE`` of the budget has passed (not only at the
end, so a misconfigured LM is caught early), and the record keeps ``inert`` for the leaderboard, which
marks such rows instead of ranking them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: share of the budget after which a constant intrinsic reward is reported on the console
WARN_SHARE = 0.05
#: metrics rows needed before anything is said
MIN_ROWS = 2


@dataclass
class InertWatch:
    """Follows the metrics rows of one run: says once, on the console, when its intrinsic reward has not
    varied so far, and gives the record's ``inert`` note at the end (``note``)."""

    method: str
    int_coef: float
    warn_after_steps: int
    low: float = float("inf")
    high: float = float("-inf")
    rows: int = 0
    last_steps: int = 0
    warned: bool = False

    @classmethod
    def for_run(cls, method: str, int_coef: float, budget: int) -> "InertWatch":
        return cls(method, int_coef, warn_after_steps=max(int(budget * WARN_SHARE), 1))

    @property
    def applies(self) -> bool:
        """Whether the run claims an intrinsic reward at all (c_int > 0 and a method other than ``none``)."""
        return self.int_coef > 0 and self.method != "none"

    def seed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Take in the rows a resumed run kept, without saying anything."""
        for row in rows:
            self._add(int(row.get("env_steps", 0)), row)
        self.warned = self.warned or (self.rows >= MIN_ROWS and self.low == self.high)

    def row(self, env_steps: int, metrics: Mapping[str, Any]) -> str | None:
        """Add one metrics row; returns the console warning the first time the reward is found constant."""
        self._add(env_steps, metrics)
        if self.warned or not self.applies or self.rows < MIN_ROWS or env_steps < self.warn_after_steps:
            return None
        if self.low != self.high:
            return None
        self.warned = True
        return (f"llmexplore run: warning: {self.method} has paid the same intrinsic reward ({self.low:g}) on every "
                f"step of the first {env_steps:,} env steps: so far this run trains as `none` would. Check the "
                "method's LM settings and its metrics (metrics.jsonl); the record will mark the run inert if this "
                "lasts to the end.")

    def note(self) -> dict[str, Any] | None:
        """The record's ``inert`` entry: set when every row seen shows one constant value; None when the reward
        varied, when the run claims none, or when the rows do not say (older runs)."""
        if not self.applies or self.rows < 1 or self.low != self.high:
            return None
        return {"constant_reward": self.low, "env_steps": self.last_steps,
                "why": f"{self.method}'s intrinsic reward was {self.low:g} on every step of the run (c_int "
                       f"{self.int_coef:g}), so it trained as `none` would: the row is not a result of the method"}

    def _add(self, env_steps: int, row: Mapping[str, Any]) -> None:
        self.last_steps = max(self.last_steps, env_steps)
        if "reward_int_min" not in row or "reward_int_max" not in row:
            return
        self.rows += 1
        self.low = min(self.low, float(row["reward_int_min"]))
        self.high = max(self.high, float(row["reward_int_max"]))


def inert_note(method: str, int_coef: float, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ``inert`` note of a run's metrics rows (``InertWatch.note``)."""
    watch = InertWatch(method, int_coef, warn_after_steps=0)
    watch.seed(rows)
    return watch.note()
