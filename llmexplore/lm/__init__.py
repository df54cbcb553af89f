"""Language-model backends, prompts, parsing, cache and annotation services."""

from llmexplore.lm.config import LMConfig

__all__ = ["LMConfig"]
