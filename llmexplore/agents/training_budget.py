"""A run's env-step budget and its one stop rule, in one place.

Training stops after the first batch whose trained count reaches the budget, never one batch later:
``TrainingWatch`` (``training_watch.py``) asks ``reached`` after every iteration, in serial and parallel
runs alike. sample-factory's own limit is set so that it never stops a run first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingBudget:
    """The env steps a run trains for, and when it stops."""

    steps: int

    @property
    def sample_factory_limit(self) -> int:
        """sample-factory's ``train_for_env_steps``: a backstop only. Its runner stops once its count
        *exceeds* this, and its count trails the learner's by one batch, so ``reached`` stops every run
        first (observers run before its check)."""
        return max(self.steps, 1)

    def reached(self, trained_steps: int) -> bool:
        """The one stop rule: the batch just trained brought the count to the budget."""
        return trained_steps >= self.steps
