"""ONI-Classification's reward model: is a caption helpful? Trained online on the LM's labels.

Architecture as published: Motif's character CNN over the 256 message bytes (reused from
``llmexplore.methods.motif.model.MessageEncoder``: embedding 256 -> 32, six convolutions,
linear 320 -> 128), then an MLP 128 -> 512 -> 512 with ReLUs, dropout 0.1, and a linear
layer to 2 logits. Cross-entropy loss, Adam (lr 1e-4), batches of 256 labelled captions.
Reward of a caption: 1 when p(helpful) > threshold (0.5), else 0.

Where we differ: each step draws a fresh batch of distinct labelled captions without
replacement (upstream iterated a shuffled loader over the label table, restarting it on
every update call, which also draws distinct captions); captions whose label could not
be read are left out (upstream counted them as unhelpful).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from llmexplore.methods.motif.model import MessageEncoder
from llmexplore.methods.oni.captions import CaptionVocabulary
from llmexplore.methods.oni.online_model import OnlineRewardModel


class CaptionClassifier(nn.Module):
    """(B, 256) bytes -> (B, 2) logits: [unhelpful, helpful]."""

    def __init__(self, hidden: int = 512, dropout: float = 0.1):
        super().__init__()
        self.encoder = MessageEncoder()
        self.head = nn.Sequential(
            nn.Linear(128, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 2),
        )

    def forward(self, message: torch.Tensor) -> torch.Tensor:
        """(B, 256) message bytes -> (B, 2) float32 logits [unhelpful, helpful]."""
        return self.head(self.encoder(message))


class ClassifierModel(OnlineRewardModel):
    """The classifier with its training set (labelled caption ids) and the reward rule."""

    def __init__(self, *, lr: float = 1e-4, batch_size: int = 256, threshold: float = 0.5, dropout: float = 0.1,
                 device: torch.device = torch.device("cpu")):
        super().__init__(CaptionClassifier(dropout=dropout), lr, device)
        self.batch_size = batch_size
        self.threshold = threshold
        self._ids: list[int] = []
        self._labels: list[int] = []
        self._known: set[int] = set()

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, caption_id: int, label: int) -> bool:
        """Add one labelled caption (0 unhelpful, 1 helpful); False when it was already there."""
        with self.data_lock:
            if caption_id in self._known:
                return False
            self._known.add(caption_id)
            self._ids.append(caption_id)
            self._labels.append(int(label))
        return True

    def _evaluate(self, network: nn.Module, rows: torch.Tensor) -> torch.Tensor:
        return (torch.softmax(network(rows), dim=-1)[:, 1] > self.threshold).float()

    def train_step(self, vocab: CaptionVocabulary, rng: np.random.Generator) -> None:
        """One cross-entropy step on up to ``batch_size`` distinct labelled
        captions, drawn without replacement; nothing before the first label."""
        with self.data_lock:
            n = len(self._ids)
            if n == 0:
                return
            pick = rng.choice(n, size=min(self.batch_size, n), replace=False)
            ids = np.asarray(self._ids)[pick]
            labels = np.asarray(self._labels)[pick]
        x = torch.from_numpy(vocab.rows(ids)).to(self.device)
        y = torch.as_tensor(labels, dtype=torch.long, device=self.device)
        self.model.train()
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        correct = int((logits.detach().argmax(-1) == y).sum())
        self._record(float(loss.detach()), correct, len(ids))
