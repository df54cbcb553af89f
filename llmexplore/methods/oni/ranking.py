"""ONI-Ranking's parts: a reservoir of experienced captions, labelled pairs, a preference model.

Published: every 10th sample of each training batch goes into a buffer of the agent's
experience (duplicates kept, so frequent captions are drawn often); while fewer than two
LM batches of questions wait, 10 random pairs from the buffer go to the LM with Motif's
ranking prompt; a Motif reward model (reused from ``llmexplore.methods.motif.model``)
trains on the labelled pairs with the Bradley-Terry-with-ties loss (Adam, lr 1e-4,
batches of 256 pairs, gradients clipped at norm 10); its reward is normalised by a running
mean and standard deviation and kept only above a threshold.

Where we differ, and why:
* The buffer is a uniform reservoir sample of fixed capacity (default 100,000 captions)
  rather than a list that grows without bound (upstream kept every 10th observation of
  billions of steps in memory). It holds caption ids, so it is small in checkpoints, and
  it is saved with them (upstream lost it, and the labelled pairs, on every restart).
* Pairs whose label could not be read (3) are kept out of training (upstream counted a
  reply without a choice as a tie).
* The normalised, thresholded reward is what the agent gets. Upstream computed it and
  then, through a misspelt variable, rewarded the raw model output instead.
* A batch runs the network once per distinct caption (Motif's ``pair_rewards``); exact.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from llmexplore.methods.motif.model import MotifRewardModel, non_tie_accuracy, preference_loss
from llmexplore.methods.motif.training import pair_rewards
from llmexplore.methods.oni.captions import CaptionVocabulary
from llmexplore.methods.oni.online_model import OnlineRewardModel
from llmexplore.methods.motif.questions import LABEL_TIE, LABEL_UNKNOWN


class CaptionReservoir:
    """A uniform sample (Algorithm R) of the caption ids offered to it, of fixed capacity."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.ids = np.zeros(capacity, dtype=np.int32)
        self.size = 0
        #: ids offered so far
        self.seen = 0

    def add(self, ids: np.ndarray, rng: np.random.Generator) -> None:
        """Offer caption ids in stream order (Algorithm R): they fill free slots, then each
        replaces a random slot with probability capacity / its position in the stream."""
        ids = np.asarray(ids, dtype=np.int32)
        free = min(self.capacity - self.size, len(ids))
        if free:
            self.ids[self.size : self.size + free] = ids[:free]
            self.size += free
        rest = ids[free:]
        if len(rest):
            # item k of the stream (1-based) replaces a random slot with probability capacity / k
            position = self.seen + free + 1 + np.arange(len(rest))
            slot = np.floor(rng.random(len(rest)) * position).astype(np.int64)
            keep = slot < self.capacity
            self.ids[slot[keep]] = rest[keep]  # in stream order: a later item overwrites an earlier one
        self.seen += len(ids)

    def sample_pairs(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count, 2) caption ids drawn uniformly from the reservoir (empty while it is)."""
        if self.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        return self.ids[rng.integers(0, self.size, size=(count, 2))].astype(np.int64)

    def state_dict(self) -> dict[str, Any]:
        """A copy of the held ids, how many ids were offered, and the capacity."""
        return {"ids": self.ids[: self.size].copy(), "seen": self.seen, "capacity": self.capacity}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the held ids and the offered count; the capacity grows when the saved sample is larger."""
        ids = np.asarray(state["ids"], dtype=np.int32)
        self.ids = np.zeros(max(self.capacity, len(ids)), dtype=np.int32)
        self.capacity = len(self.ids)
        self.ids[: len(ids)] = ids
        self.size = len(ids)
        self.seen = int(state["seen"])


class RankingModel(OnlineRewardModel):
    """The preference model with its training set (labelled pairs of caption ids)."""

    def __init__(self, *, lr: float = 1e-4, batch_size: int = 256, grad_clip: float = 10.0,
                 device: torch.device = torch.device("cpu")):
        super().__init__(MotifRewardModel(), lr, device)
        self.batch_size = batch_size
        self.grad_clip = grad_clip
        self._pairs: list[tuple[int, int]] = []
        self._labels: list[int] = []
        #: caption ids that appear in a usable labelled pair
        self.in_pairs: set[int] = set()

    def __len__(self) -> int:
        return len(self._pairs)

    def add(self, first: int, second: int, label: int) -> bool:
        """Add one labelled pair (0 first preferred, 1 second, 2 tie); unknown (3) is refused."""
        if label == LABEL_UNKNOWN or not 0 <= int(label) <= LABEL_TIE:
            return False
        with self.data_lock:
            self._pairs.append((first, second))
            self._labels.append(int(label))
        self.in_pairs.update((first, second))
        return True

    def _evaluate(self, network: torch.nn.Module, rows: torch.Tensor) -> torch.Tensor:
        return network(rows)

    def train_step(self, vocab: CaptionVocabulary, rng: np.random.Generator) -> None:
        """One Bradley-Terry step on up to ``batch_size`` labelled pairs drawn without
        replacement, gradient norm clipped at ``grad_clip``; nothing before the first pair."""
        with self.data_lock:
            n = len(self._pairs)
            if n == 0:
                return
            pick = rng.choice(n, size=min(self.batch_size, n), replace=False)
            chosen = np.asarray(self._pairs, dtype=np.int64)[pick]
            labels = torch.as_tensor(np.asarray(self._labels)[pick], dtype=torch.long)
        distinct, inverse = np.unique(chosen, return_inverse=True)
        table = torch.from_numpy(vocab.rows(distinct))
        pairs = torch.from_numpy(inverse.reshape(-1, 2).astype(np.int64))
        self.model.train()
        rewards = pair_rewards(self.model, table, pairs, self.device)
        loss = preference_loss(rewards, labels.to(self.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        correct, total = non_tie_accuracy(rewards.detach().cpu(), labels)
        self._record(float(loss.detach()), correct, total)
