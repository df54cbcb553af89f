"""llmexplore: a benchmark suite for exploration guided by language-model feedback."""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__`` on first use: reading package metadata costs start-up time most commands do not need."""
    if name != "__version__":
        raise AttributeError(f"module 'llmexplore' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("llmexplore")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.1.0"
    globals()["__version__"] = found
    return found
