"""The captions ONI labels: decoded NetHack messages, numbered in order of first sight.

A learner batch holds N x T messages but few distinct ones, and the same few repeat from
batch to batch. ``CaptionVocabulary.index`` finds the distinct 256-byte rows of a batch
once (``np.unique`` over whole rows), maps each row to a caption id through a dictionary
kept across batches, and returns per-step indices. Everything downstream (labels, model
predictions, the pair reservoir) is an array indexed by caption id.

The reward models read the caption's canonical encoding (``encode_message(caption)``),
not the raw row, so a model sees exactly the text the LM judged; two rows that decode to
the same caption (trailing blanks) share one id.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from llmexplore.envs.nethack.text import decode_message, encode_message

MESSAGE_BYTES = 256
_ROW = np.dtype((np.void, MESSAGE_BYTES))


class CaptionVocabulary:
    """id <-> caption, with the canonical byte rows the reward models read."""

    def __init__(self) -> None:
        self.captions: list[str] = []
        self._ids: dict[str, int] = {}
        self._row_ids: dict[bytes, int] = {}
        self._rows = np.zeros((64, MESSAGE_BYTES), dtype=np.uint8)

    def __len__(self) -> int:
        return len(self.captions)

    def id_of(self, caption: str) -> int:
        """The caption's id, adding it when new."""
        found = self._ids.get(caption)
        if found is not None:
            return found
        new = len(self.captions)
        if new == len(self._rows):
            grown = np.zeros((2 * len(self._rows), MESSAGE_BYTES), dtype=np.uint8)
            grown[:new] = self._rows
            self._rows = grown
        self.captions.append(caption)
        self._ids[caption] = new
        self._rows[new] = encode_message(caption)
        return new

    def index(self, messages: torch.Tensor | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Caption ids of a batch of messages [..., 256]: (distinct ids, inverse) with
        ``distinct[inverse]`` the id of every step in row-major order."""
        flat = np.ascontiguousarray(_numpy(messages).reshape(-1, MESSAGE_BYTES), dtype=np.uint8)
        distinct_rows, inverse = np.unique(flat.view(_ROW).ravel(), return_inverse=True)
        ids = np.empty(len(distinct_rows), dtype=np.int64)
        for i, row in enumerate(distinct_rows):
            key = row.tobytes()
            found = self._row_ids.get(key)
            if found is None:
                found = self.id_of(decode_message(np.frombuffer(key, dtype=np.uint8)))
                self._row_ids[key] = found
            ids[i] = found
        # ids of distinct rows may repeat (rows decoding alike): collapse them
        distinct, remap = np.unique(ids, return_inverse=True)
        return distinct, remap[inverse.ravel()]

    def rows(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """Canonical 256-byte encodings of captions, shape (len(ids), 256)."""
        return self._rows[np.asarray(ids, dtype=np.int64)]

    def state_dict(self) -> dict[str, Any]:
        """The captions in id order (ids are their positions)."""
        return {"captions": list(self.captions)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace everything with the saved captions, each keeping its id; the raw-row lookup starts empty."""
        self.__init__()
        for caption in state["captions"]:
            self.id_of(caption)


def _numpy(x: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.uint8).numpy()
    return np.asarray(x, dtype=np.uint8)
