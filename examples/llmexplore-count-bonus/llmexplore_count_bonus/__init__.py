"""An example llmexplore method plugin (docs/EXTENDING.md): an episodic count bonus."""

from llmexplore_count_bonus.method import EpisodicCountBonus

__all__ = ["EpisodicCountBonus"]
