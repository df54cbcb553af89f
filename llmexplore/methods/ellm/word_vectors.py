"""Static word vectors from a sentence-transformers folder: its tokenizer and input embedding table.

ONI's ELLM-BoW baseline sums fastText word vectors (crawl-300d-2M-subword, a 7 GB download).
Offline we take the input token-embedding matrix of the local MiniLM model instead: the
tokenizer splits text into WordPiece tokens and the bag is the sum of their rows. Tokens
without a letter or digit (punctuation) are left out, as fastText's whitespace tokens keep
punctuation attached to words rather than counting it on its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from llmexplore.errors import ConfigError, require

_TABLE_SUFFIX = "word_embeddings.weight"


class WordPieceVectors:
    def __init__(self, model_dir: str | Path):
        model_dir = Path(model_dir)
        tokenizers = require("tokenizers", "embeddings", "ELLM-BoW's word vectors")
        safetensors = require("safetensors", "embeddings", "ELLM-BoW's word vectors")
        tokenizer_file, weights = model_dir / "tokenizer.json", model_dir / "model.safetensors"
        for path in (tokenizer_file, weights):
            if not path.is_file():
                raise ConfigError(f"{model_dir} has no {path.name}, which ELLM-BoW's word vectors need",
                                  hint="point model_path at a sentence-transformers folder with a fast tokenizer "
                                       "and safetensors weights")
        self.tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        with safetensors.safe_open(str(weights), "np") as f:
            names = [k for k in f.keys() if k.endswith(_TABLE_SUFFIX)]
            if len(names) != 1:
                raise ConfigError(f"{weights} holds {len(names)} tensors named *{_TABLE_SUFFIX}; expected one")
            self.table = np.asarray(f.get_tensor(names[0]), dtype=np.float32)
        self.dim = int(self.table.shape[1])
        vocab = self.tokenizer.get_vocab()
        self._wordlike = np.zeros(self.table.shape[0], dtype=bool)
        for token, index in vocab.items():
            if index < len(self._wordlike) and any(c.isalnum() for c in token) and not token.startswith("["):
                self._wordlike[index] = True

    def tokens(self, text: str) -> list[str]:
        """The word pieces that go into the bag."""
        return [self.tokenizer.id_to_token(i) for i in self._ids(text)]

    def _ids(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        return [i for i in ids if self._wordlike[i]]

    def bag(self, text: str) -> np.ndarray:
        """Sum of the word-piece vectors of the text (zeros for a text without words)."""
        ids = self._ids(text)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        return self.table[ids].sum(axis=0)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity; 0 when either vector is zero (an empty message matches nothing)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a @ b) / (na * nb)
