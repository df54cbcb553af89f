"""What the three ONI methods share, as functions and small parts each variant composes.

* ``read_captions``: a batch's next captions as caption ids, with the steps that count and the
  episodic message counts; ``count_divided`` turns per-step values into ONI's reward.
* ``RewardCounters`` and ``shared_metrics``: the figures every variant logs.
* ``shared_state``, ``load_shared_state``, ``shared_summary``: the caption vocabulary and the
  service's labels in checkpoints.
* ``LabelTable``: retrieval's and classification's per-caption labels.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY
from llmexplore.errors import ConfigError, DataError

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from llmexplore.methods.base import RewardBatch
    from llmexplore.methods.oni.captions import CaptionVocabulary
    from llmexplore.methods.oni.labeler import OnlineLabeler

STATE_FORMAT = "oni-state-v1"
#: label codes of the retrieval table besides the LM's 0 / 1
NO_LABEL, UNKNOWN_LABEL = -1, -2


@dataclass(frozen=True)
class CaptionBatch:
    """The captions of the observations a batch's transitions led to, flattened to N*T steps."""

    #: (N, T)
    shape: tuple[int, int]
    #: caption ids of the batch's distinct captions
    distinct: np.ndarray
    #: per step, the index of its caption in ``distinct``
    inverse: np.ndarray
    #: per step, False where the transition ended an episode (its next caption is the next episode's)
    valid: np.ndarray
    #: per step, the episodic count of the caption, this step included (float32)
    counts: np.ndarray


def read_captions(method: str, vocab: CaptionVocabulary, batch: RewardBatch) -> CaptionBatch:
    """The batch's next captions, numbered by ``vocab`` (new captions get new ids)."""
    import torch

    nxt = batch.next_obs
    if EPISODIC_MESSAGE_COUNT_KEY not in nxt:
        raise ConfigError(f"{method} needs the observation key '{EPISODIC_MESSAGE_COUNT_KEY}' added by its env wrapper")
    distinct, inverse = vocab.index(nxt["message"])
    valid = batch.dones.reshape(-1).cpu().numpy() == 0
    counts = nxt[EPISODIC_MESSAGE_COUNT_KEY].reshape(-1).to("cpu", torch.float32).numpy()
    return CaptionBatch(batch.shape, distinct, inverse, valid, counts)


def count_divided(step_values: np.ndarray, captions: CaptionBatch, beta: float) -> np.ndarray:
    """ONI's reward per step: the value over N_ep(m)^beta, 0 where the transition ended an episode (float32)."""
    return np.where(captions.valid, step_values / np.maximum(captions.counts, 1.0) ** beta, 0.0).astype(np.float32)


def as_reward_tensor(r_int: np.ndarray, captions: CaptionBatch, batch: RewardBatch) -> torch.Tensor:
    """[N, T] on the batch's device."""
    import torch

    return torch.from_numpy(r_int.reshape(captions.shape)).to(batch.dones.device)


class RewardCounters:
    """Steps, steps with a labelled caption, rewarded steps, ``reward`` calls, seconds in ``reward`` and in
    ``update``, since the last metrics row."""

    def __init__(self) -> None:
        self.values = np.zeros(6)

    def rewarded(self, captions: CaptionBatch, labelled: np.ndarray, r_int: np.ndarray, started: float) -> None:
        """One ``reward`` call that began at ``started`` (``time.perf_counter``)."""
        self.values[:5] += (captions.valid.sum(), labelled.sum(), (r_int != 0).sum(), 1,
                            time.perf_counter() - started)

    def updated(self, started: float) -> None:
        """One ``update`` call that began at ``started``."""
        self.values[5] += time.perf_counter() - started


def shared_metrics(labeler: OnlineLabeler, vocab: CaptionVocabulary, counters: RewardCounters) -> dict[str, float]:
    """The service's figures, the caption count, and the shares and timings since the last row (which
    restart here)."""
    steps, labelled, rewarded, batches, reward_s, update_s = counters.values
    stats = labeler.stats()
    out = {
        "oni_queue_length": stats["queue_length"],
        "oni_labels_per_second": stats["labels_per_second"],
        "oni_labels_total": stats["labels_total"],
        "oni_dedup_saved": stats["dedup_saved"],
        "oni_dropped": stats["dropped"],
        "oni_prompts_sent": stats["prompts_sent"],
        "oni_parse_failures": stats["parse_failures"],
        "oni_backend_errors": stats["backend_errors"],
        "oni_captions": float(len(vocab)),
    }
    if batches:
        out.update(oni_labelled_share=labelled / max(steps, 1), oni_rewarded_share=rewarded / max(steps, 1),
                   oni_reward_ms_per_batch=1000 * reward_s / batches, oni_update_ms_per_batch=1000 * update_s / batches)
    counters.values[:] = 0
    return {k: float(v) for k, v in out.items()}


def shared_state(method: str, vocab: CaptionVocabulary, labeler: OnlineLabeler) -> dict[str, Any]:
    """The checkpoint entries every variant saves: its name, the vocabulary, the service's labels and questions."""
    return {"format": STATE_FORMAT, "method": method, "vocabulary": vocab.state_dict(),
            "service": labeler.state_dict()}


def load_shared_state(method: str, vocab: CaptionVocabulary, labeler: OnlineLabeler, state: Mapping[str, Any],
                      receive: Callable[[Iterable[tuple[Any, Any]]], None]) -> bool:
    """Restore what ``shared_state`` saved and hand every stored label to ``receive`` (the variant rebuilds its
    training set from them); False for an empty state, which changes nothing."""
    if not state:
        return False
    if state.get("format") != STATE_FORMAT or state.get("method") != method:
        raise DataError(f"the checkpoint holds state of {state.get('method')!r} ({state.get('format')}), "
                        f"not of {method!r} ({STATE_FORMAT})",
                        hint="resume a run with the method it was started with")
    labeler.check_state(state["service"])  # before anything is loaded: labels of another question
    vocab.load_state_dict(state["vocabulary"])
    labeler.load_state_dict(state["service"])
    receive(labeler.labels().items())
    return True


def shared_summary(vocab: CaptionVocabulary, labeler: OnlineLabeler) -> dict[str, Any]:
    """Captions, labels and pending questions, and a digest of the label table."""
    service = labeler.state_dict()
    return {"captions": len(vocab), "labels": len(service["labels"]), "pending": len(service["pending"]),
            "labels_sha256": label_table_digest(service["labels"])}


def label_table_digest(labels: Iterable[tuple[Any, Any] | list[Any]]) -> str:
    """sha256 of the label table as sorted JSON lines ``[item, label]`` (pairs as 2-lists)."""
    lines = sorted(json.dumps([list(i) if isinstance(i, (tuple, list)) else i, lab]) for i, lab in labels)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def caption_sequence_digest(captions: Iterable[str]) -> str:
    """sha256 of a sequence of captions as JSON lines, in order."""
    return hashlib.sha256("\n".join(json.dumps(c) for c in captions).encode()).hexdigest()


class LabelTable:
    """Per-caption LM labels of retrieval and classification: -1 none yet, -2 unreadable, 0 / 1."""

    def __init__(self) -> None:
        self.codes = np.full(1024, NO_LABEL, dtype=np.int8)

    def ensure(self, size: int) -> None:
        """Room for ``size`` caption ids."""
        if size > len(self.codes):
            grown = np.full(max(size, 2 * len(self.codes)), NO_LABEL, dtype=np.int8)
            grown[: len(self.codes)] = self.codes
            self.codes = grown

    def get(self, ids: np.ndarray) -> np.ndarray:
        """The codes of caption ids."""
        return self.codes[ids]

    def store(self, vocab: CaptionVocabulary, labelled: Iterable[tuple[Any, Any]]) -> list[tuple[int, Any]]:
        """Store each (caption, label) (None: unreadable, never asked again), numbering new captions;
        returns (caption id, label) of each, in order."""
        stored = []
        for caption, label in labelled:
            cid = vocab.id_of(caption)
            self.ensure(cid + 1)
            self.codes[cid] = UNKNOWN_LABEL if label is None else int(label)
            stored.append((cid, label))
        return stored

    def unlabelled_captions(self, vocab: CaptionVocabulary, distinct: np.ndarray) -> list[str]:
        """The captions among ``distinct`` ids that have no label yet."""
        self.ensure(len(vocab))
        return [vocab.captions[i] for i in distinct[self.get(distinct) == NO_LABEL]]
