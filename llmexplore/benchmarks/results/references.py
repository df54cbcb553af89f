"""Published reference results (references.yaml), kept apart from our runs."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=1)
def published() -> dict[str, dict[str, Any]]:
    """Every task's published reference results (references.yaml), by task name."""
    text = resources.files("llmexplore.benchmarks.results").joinpath("references.yaml").read_text()
    return yaml.safe_load(text)


def for_task(task: str) -> dict[str, Any] | None:
    """A task's published reference results, or None when none are known."""
    return published().get(task)
