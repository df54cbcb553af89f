"""Grid backends: where cells run. Register new ones in BACKENDS.

Imports are lazy: Ray workers and SLURM jobs import ``runners.launch`` alone, without the
orchestrator and everything a grid pulls in.
"""

from __future__ import annotations

import importlib
from typing import Any

BACKENDS: dict[str, str] = {
    "local": "llmexplore.benchmarks.grids.runners.local:LocalBackend",
    "ray": "llmexplore.benchmarks.grids.runners.ray_backend:RayBackend",
    "slurm": "llmexplore.benchmarks.grids.runners.slurm:SlurmBackend",
}

_EXPORTS = {
    "GridBackend": "llmexplore.benchmarks.grids.runners.base",
    "GridRunner": "llmexplore.benchmarks.grids.runners.base",
    "GridView": "llmexplore.benchmarks.grids.runners.base",
    "LocalBackend": "llmexplore.benchmarks.grids.runners.local",
}

__all__ = ["BACKENDS", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
