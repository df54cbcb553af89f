"""llmexplore: a benchmark suite for exploration guided by language-model feedback."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("llmexplore")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"

__all__ = ["__version__"]
