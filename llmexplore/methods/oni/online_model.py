"""A reward model trained online on captions: network, Adam, and a per-caption value cache.

The learner needs the model's value for the few distinct captions of each batch. Values
are cached per caption id together with the model version (the number of gradient steps
taken) they were computed with, so a batch runs the network only on captions it has not
evaluated since the last step. Until the first step the model is untrained and its
values mean nothing; ``trained`` tells the method to give no reward yet (the published
code rewarded with the untrained network's output from the first batch on).

When the model trains on a thread of its own (``background.py``), values come from a
scoring copy of the network that the training thread replaces after each step
(``publish``); otherwise the training network scores directly. ``data_lock`` keeps the
training set consistent between the learner, which adds examples, and the thread, which
samples them.
"""

from __future__ import annotations

import copy
import threading
from abc import ABC, abstractmethod
from typing import Any, Mapping

import numpy as np
import torch
from torch import nn

from llmexplore.methods.oni.captions import CaptionVocabulary

EVAL_CHUNK = 4096


class OnlineRewardModel(ABC):
    def __init__(self, model: nn.Module, lr: float, device: torch.device):
        self.device = device
        self.model = model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        #: gradient steps taken; 0 means untrained
        self.version = 0
        #: the network values are computed with, and its version; None: the training network itself
        self._scoring: tuple[nn.Module, int] | None = None
        self.data_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._values = np.zeros(0, dtype=np.float32)
        self._computed_at = np.zeros(0, dtype=np.int64)
        #: loss, accuracy numerator and denominator, steps since the last ``take_stats``
        self._stats = np.zeros(4)

    @property
    def trained(self) -> bool:
        """Whether the values the learner gets come from a network that
        has taken a step (before that the method pays nothing)."""
        return self.scoring_version > 0

    @property
    def scoring_version(self) -> int:
        """Gradient steps behind the values the learner gets now."""
        return self.version if self._scoring is None else self._scoring[1]

    def score_with_copies(self) -> None:
        """From now on score with published copies (training moves to another thread)."""
        self.publish(force=True)

    def publish(self, force: bool = False) -> None:
        """Make the training network's current weights the ones values are computed with."""
        if self._scoring is not None or force:
            scoring = copy.deepcopy(self.model).eval()
            for p in scoring.parameters():
                p.requires_grad_(False)
            self._scoring = (scoring, self.version)  # one assignment: the learner sees the old or the new copy

    @abstractmethod
    def _evaluate(self, network: nn.Module, rows: torch.Tensor) -> torch.Tensor:
        """Per-caption value (B,) of canonical rows (B, 256) by ``network`` in eval mode, no grad."""

    @torch.no_grad()
    def values(self, ids: np.ndarray, vocab: CaptionVocabulary) -> np.ndarray:
        """The current model's value of each caption id (cached per model version)."""
        if len(self._values) < len(vocab):
            grow = len(vocab) - len(self._values) + 1024
            self._values = np.concatenate([self._values, np.zeros(grow, dtype=np.float32)])
            self._computed_at = np.concatenate([self._computed_at, np.full(grow, -1, dtype=np.int64)])
        network, version = (self.model, self.version) if self._scoring is None else self._scoring
        stale = ids[self._computed_at[ids] != version]
        if len(stale):
            network.eval()
            for i in range(0, len(stale), EVAL_CHUNK):
                part = stale[i : i + EVAL_CHUNK]
                rows = torch.from_numpy(vocab.rows(part)).to(self.device)
                self._values[part] = self._evaluate(network, rows).float().cpu().numpy()
            self._computed_at[stale] = version
        return self._values[ids]

    def _record(self, loss: float, correct: int, total: int) -> None:
        with self._stats_lock:
            self.version += 1
            self._stats += (loss, correct, total, 1)

    def take_stats(self) -> dict[str, float]:
        """Mean training loss and accuracy since the last call (empty when no step was taken)."""
        with self._stats_lock:
            loss, correct, total, steps = self._stats
            self._stats[:] = 0
        if not steps:
            return {}
        out = {"loss": loss / steps}
        if total:
            out["accuracy"] = correct / total
        return out

    def state_dict(self) -> dict[str, Any]:
        """A copy (the training thread goes on changing the network in place once its lock is let go)."""
        return copy.deepcopy({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                              "version": self.version})

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore network, optimiser and step count, drop every cached
        value, and publish the weights when scoring with copies."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])
        self._computed_at[:] = -1
        self.publish()
