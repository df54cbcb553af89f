"""Grid backends: where cells run. Register new ones in BACKENDS."""

from __future__ import annotations

from llmexplore.benchmarks.runners.base import GridBackend, GridRunner, GridView
from llmexplore.benchmarks.runners.local import LocalBackend

BACKENDS: dict[str, str] = {
    "local": "llmexplore.benchmarks.runners.local:LocalBackend",
}

__all__ = ["BACKENDS", "GridBackend", "GridRunner", "GridView", "LocalBackend"]
