"""A frozen Motif reward model applied to messages, shared by ``motif`` and ``maestro``.

    r_hat = (r(m) - mean) / std        (mean, std: frequency-weighted, saved with the model)
    kept  = r_hat if r_hat > eps else 0 (eps: the saved quantile at ``eps_quantile``)

The model runs once per distinct message of a batch, and r_hat is cached per message
(the model is frozen, so cached values are exact).
"""

from __future__ import annotations

import numpy as np
import torch

from llmexplore.methods.motif.artifacts import load_reward_model
from llmexplore.methods.motif.model import MESSAGE_BYTES

_ROW = np.dtype((np.void, MESSAGE_BYTES))


class RewardScorer:
    def __init__(self, path: str, device: torch.device | str = "cpu", eps_quantile: float = 0.5,
                 cache_size: int = 200_000):
        loaded = load_reward_model(path, device)
        self.model = loaded.model
        self.device = torch.device(device)
        self.mean, self.std = loaded.mean, loaded.std
        self.model_id = loaded.model_id
        self.path = loaded.path
        self.eps = loaded.threshold(eps_quantile) if eps_quantile > 0 else -np.inf
        self.cache_size = cache_size
        self._cache: dict[bytes, float] = {}
        #: distinct messages looked up, and how many of them the cache answered
        self.lookups = 0
        self.hits = 0

    @property
    def cached(self) -> int:
        """How many messages' r_hat the cache holds now."""
        return len(self._cache)

    @torch.no_grad()
    def normalized(self, messages: np.ndarray) -> np.ndarray:
        """r_hat for (M, 256) distinct messages, from the cache or the model."""
        out = np.empty(len(messages), dtype=np.float32)
        missing = []
        for i, row in enumerate(messages):
            value = self._cache.get(row.tobytes())
            if value is None:
                missing.append(i)
            else:
                out[i] = value
        self.lookups += len(messages)
        self.hits += len(messages) - len(missing)
        if missing:
            x = torch.from_numpy(np.ascontiguousarray(messages[missing])).to(self.device)
            values = ((self.model(x).double() - self.mean) / self.std).float().cpu().numpy()
            out[missing] = values
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()  # rare: NetHack's message set is small; start over rather than track ages
            if self.cache_size:
                for i, value in zip(missing, values):
                    self._cache[messages[i].tobytes()] = float(value)
        return out

    def r_hat(self, messages: torch.Tensor) -> tuple[torch.Tensor, int]:
        """r_hat for [n, 256] messages (any dtype holding bytes) and the number of distinct ones."""
        flat = messages.reshape(-1, MESSAGE_BYTES).to("cpu", torch.uint8).numpy()
        rows = np.ascontiguousarray(flat).view(_ROW).ravel()
        distinct, inverse = np.unique(rows, return_inverse=True)
        values = self.normalized(distinct.view(np.uint8).reshape(-1, MESSAGE_BYTES))[inverse]
        return torch.from_numpy(values), len(distinct)

    def threshold(self, r_hat: torch.Tensor) -> torch.Tensor:
        """r_hat where it exceeds ``eps``, else 0; same shape and dtype."""
        return torch.where(r_hat > self.eps, r_hat, torch.zeros_like(r_hat))
