"""One embedding model, one LM connection and one answer table per process, shared by its envs.

A rollout worker runs many env copies (16 by default); each would otherwise load its own
copy of the sentence model (~90 MB, ~1 s) and open its own cache connection, and its
answer tables would fill separately. Objects live as long as the process: the LM cache
commits every answer as it arrives, so nothing is lost when a worker exits.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")
_objects: dict[tuple, Any] = {}
_lock = threading.Lock()


def shared(key: tuple, build: Callable[[], T]) -> T:
    """The object stored under ``key`` in this process, built on first request."""
    with _lock:
        if key not in _objects:
            _objects[key] = build()
        return _objects[key]


def embedder(path: Path):
    """This process's one ``SentenceEmbedder`` for the model folder ``path`` (keyed by its resolved path)."""
    from llmexplore.methods.ellm.embedding import SentenceEmbedder

    return shared(("embedder", str(Path(path).resolve())), lambda: SentenceEmbedder(path))


def language_model(config, cache_dir: Path):
    """``make_lm`` once per (LM settings, cache file)."""
    from llmexplore.lm.backends import make_lm

    key = ("lm", config.model_dump_json(), config.cache_path(cache_dir))
    return shared(key, lambda: make_lm(config, cache_dir=cache_dir))


def clear() -> None:
    """Drop everything (tests); closes LM connections."""
    with _lock:
        for key, obj in _objects.items():
            if key[0] == "lm":
                obj.close()
        _objects.clear()
