"""Train Motif's reward model on a labelled pair dataset (``llmexplore motif train-reward``).

Faithful to the published training (Adam, lr 1e-5, batch 1024, 10 epochs, 80/20 split of
the annotated pairs, unknown labels dropped, Bradley-Terry loss with ties), with two
choices of ours, both exact rather than approximate.

Unknown labels (3: the answer could not be read after a retry, or the pair was never
asked) are dropped as the published code drops them: its pair dataset keeps only labels
other than unknown, so the "label above 1 means no preference" rule of its training loop
only ever meets ties. ``unknown="tie"`` counts them as ties instead (use it on a finished
annotation, where every 3 is an unreadable answer).

* The model reads the message only, and NetHack messages repeat heavily, so every
  distinct message of the dataset is stored once (a table) and pairs index into it.
  A batch runs the network once per distinct message it contains; gradients of repeated
  messages add up exactly as if each occurrence had run the network.
* Reward statistics (frequency-weighted mean and variance over training observations,
  quantiles over unique training messages) come from the same table with occurrence
  counts as weights, after the last epoch, in this run's own folder.

Resumable: after every epoch the model, optimizer and metrics are checkpointed
atomically; rerunning the same command continues after the last finished epoch, and the
result equals an uninterrupted run (shuffles are seeded per epoch).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from llmexplore.atomic import atomic_write_json
from llmexplore.errors import ConfigError, DataError
from llmexplore.methods.motif import artifacts
from llmexplore.methods.motif.dataset import LABEL_TIE, LABEL_UNKNOWN, open_pair_dataset
from llmexplore.methods.motif.folder_lock import folder_writer
from llmexplore.methods.motif.model import MESSAGE_BYTES, MotifRewardModel, non_tie_accuracy, preference_loss

METRIC_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "val_score_agreement",
                  "seconds", "pairs_per_second")
EVAL_CHUNK = 8192


class RewardTrainingOptions(BaseModel):
    """Published defaults; every field can be overridden."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    lr: float = Field(1e-5, gt=0, description="Adam learning rate of the reward model (published 1e-5)")
    batch_size: int = Field(1024, ge=1, description="preference pairs per gradient step (published 1,024)")
    epochs: int = Field(10, ge=1, description="passes over the training pairs (published 10)")
    val_fraction: float = Field(
        0.2, gt=0, lt=1, description="share of the pairs held out for validation, in (0, 1)")
    seed: int = Field(0, ge=0, description="seed of the split and of the network's initialisation")
    device: Literal["cpu", "cuda", "auto"] = Field(
        "cpu", description="where the reward model trains: cpu, cuda, or auto (cuda when available)")
    #: 1 by default: the network is small, and on a shared 2-core machine torch's 2-thread ops
    #: ran 4x slower than one thread (tests/perf/motif_reward_training.py); raise it on a
    #: dedicated many-core CPU
    threads: int | None = Field(1, ge=1, description="CPU threads for torch (None: torch's choice)")
    unknown: Literal["drop", "tie"] = Field(
        "drop", description="unknown labels (3): dropped as published, or counted as ties")

    def torch_device(self) -> torch.device:
        """The device to train on; ``auto`` is cuda when one is
        visible. ConfigError for ``cuda`` without a visible device."""
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("--device cuda, but no CUDA device is visible", hint="use --device cpu or auto")
        return torch.device(self.device)


def unique_messages(messages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K, 2, 256) bytes -> table (U, 256) of distinct messages and (K, 2) indices into it."""
    flat = np.ascontiguousarray(messages.reshape(-1, MESSAGE_BYTES), dtype=np.uint8)
    rows = flat.view(np.dtype((np.void, MESSAGE_BYTES))).ravel()
    distinct, inverse = np.unique(rows, return_inverse=True)
    table = distinct.view(np.uint8).reshape(-1, MESSAGE_BYTES)
    return table, inverse.reshape(messages.shape[0], 2)


@dataclass
class PreparedData:
    table: torch.Tensor  # (U, 256) uint8
    pairs: torch.Tensor  # (K, 2) int64 into table
    labels: torch.Tensor  # (K,) int64 in {0, 1, 2}
    score: torch.Tensor | None  # (K, 2) game score, if the dataset has info/score
    train: torch.Tensor  # indices into the K annotated pairs
    val: torch.Tensor
    fingerprint: dict[str, Any]
    collection: dict[str, Any] | None = None  # the dataset's collection.json (not part of the fingerprint)


def prepare_data(dataset: str | Path, annotation: str, options: RewardTrainingOptions) -> PreparedData:
    """The annotation's usable pairs as a table of distinct messages, pair indices, labels 0-2,
    game scores when saved, and a seeded train/val split; DataError when they cannot be split."""
    ds = open_pair_dataset(dataset)
    labels = np.asarray(ds.labels(annotation))
    unknown = int(np.count_nonzero(labels == LABEL_UNKNOWN))
    if options.unknown == "tie":
        labels = np.where(labels == LABEL_UNKNOWN, LABEL_TIE, labels)
    known = np.flatnonzero(labels != LABEL_UNKNOWN)
    path = ds.preference_path(annotation)
    if len(known) < 2:
        raise DataError(f"{path}: {len(known)} annotated pairs (label 0, 1 or 2); at least 2 are needed",
                        hint="annotate the dataset first (`llmexplore motif annotate`)")
    n_val = int(round(len(known) * options.val_fraction))
    if n_val == 0 or n_val == len(known):
        raise DataError(f"{path}: {len(known)} annotated pairs cannot be split {1 - options.val_fraction:.0%}/"
                        f"{options.val_fraction:.0%} into non-empty training and validation sets")
    table, pairs = unique_messages(np.asarray(ds.messages[known]))
    score = ds.info.get("score")
    perm = torch.randperm(len(known), generator=torch.Generator().manual_seed(options.seed))
    n_train = len(known) - n_val
    counts = np.bincount(labels[known], minlength=3)
    fingerprint = {
        "dataset": str(Path(dataset).resolve()),
        "annotation": annotation,
        "pairs": len(ds),
        "annotated_pairs": int(len(known)),
        "label_counts": {"first": int(counts[0]), "second": int(counts[1]), "tie": int(counts[LABEL_TIE])},
        "unknown_labels": unknown,
        "unknown_as": options.unknown,
        "labels_sha256": hashlib.sha256(np.ascontiguousarray(labels).tobytes()).hexdigest()[:16],
        "unique_messages": int(len(table)),
        "train_pairs": n_train,
        "val_pairs": n_val,
    }
    return PreparedData(
        table=torch.from_numpy(table.copy()),
        pairs=torch.from_numpy(pairs.astype(np.int64)),
        labels=torch.from_numpy(labels[known].astype(np.int64)),
        score=torch.from_numpy(np.asarray(score[known], dtype=np.float64)) if score is not None else None,
        train=perm[:n_train],
        val=perm[n_train:],
        fingerprint=fingerprint,
        collection=ds.collection_record(),
    )


def pair_rewards(model: MotifRewardModel, table: torch.Tensor, pairs: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Rewards (B, 2) of the pairs, running the network once per distinct message."""
    distinct, inverse = torch.unique(pairs, return_inverse=True)
    rewards = model(table[distinct].to(device, non_blocking=True))
    return rewards[inverse.to(device)]


@torch.no_grad()
def message_rewards(model: MotifRewardModel, messages: torch.Tensor, device: torch.device) -> torch.Tensor:
    """r(m) for a (U, 256) table, in chunks, on the CPU as float64."""
    out = [model(messages[i : i + EVAL_CHUNK].to(device)).double().cpu() for i in range(0, len(messages), EVAL_CHUNK)]
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)


@torch.no_grad()
def evaluate(model: MotifRewardModel, data: PreparedData, subset: torch.Tensor, device: torch.device) -> dict[str, float]:
    """Loss, accuracy on non-tie pairs, and agreement with the game score (pairs whose scores differ)."""
    model.eval()
    pairs = data.pairs[subset]
    distinct, inverse = torch.unique(pairs, return_inverse=True)
    rewards = message_rewards(model, data.table[distinct], device)[inverse]
    labels = data.labels[subset]
    loss = float(preference_loss(rewards, labels))
    correct, total = non_tie_accuracy(rewards, labels)
    result = {"val_loss": loss, "val_accuracy": correct / total if total else math.nan,
              "val_score_agreement": math.nan}
    if data.score is not None:
        score = data.score[subset]
        differs = score[:, 0] != score[:, 1]
        if bool(differs.any()):
            agree = (rewards[:, 1] > rewards[:, 0]) == (score[:, 1] > score[:, 0])
            result["val_score_agreement"] = float(agree[differs].double().mean())
    model.train()
    return result


def reward_statistics(model: MotifRewardModel, data: PreparedData, device: torch.device):
    """Frequency-weighted mean/var over training observations; z-scored rewards of unique training messages."""
    occurrences = torch.bincount(data.pairs[data.train].reshape(-1), minlength=len(data.table))
    used = torch.nonzero(occurrences).squeeze(1)
    rewards = message_rewards(model, data.table[used], device)
    weights = occurrences[used].double()
    count = float(weights.sum())
    mean = float((weights * rewards).sum() / count)
    var = float((weights * (rewards - mean) ** 2).sum() / count)
    z_unique = ((rewards - mean) / math.sqrt(var)).numpy() if var > 0 else np.zeros(len(used))
    return mean, var, int(count), int(len(used)), z_unique


EpochCallback = Callable[[dict[str, float]], None]
BatchCallback = Callable[[int, int, int], None]  # epoch, batch, batches


def train_reward_model(dataset: str | Path, annotation: str, out: str | Path,
                       options: RewardTrainingOptions | None = None,
                       on_epoch: EpochCallback | None = None, on_batch: BatchCallback | None = None) -> dict[str, Any]:
    """Train (or resume) and write the reward-model folder; returns the manifest. One training writes a
    folder at a time: a second on the same ``out`` is refused at once, naming the first (``folder_writer``)."""
    options = options or RewardTrainingOptions()
    threads = torch.get_num_threads()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    out = Path(out).expanduser()
    try:
        with folder_writer(out, "motif train-reward"):
            return _train(dataset, annotation, out, options, on_epoch, on_batch)
    finally:
        torch.set_num_threads(threads)


def _train(dataset: str | Path, annotation: str, out: Path, options: RewardTrainingOptions,
           on_epoch: EpochCallback | None, on_batch: BatchCallback | None) -> dict[str, Any]:
    if (out / artifacts.MANIFEST_FILE).exists():
        raise ConfigError(f"{out} already holds a trained reward model",
                          hint="choose another --out; reward-model folders are never overwritten or appended to")
    device = options.torch_device()
    data = prepare_data(dataset, annotation, options)
    config = {"options": options.model_dump(exclude={"device", "threads"}), "data": data.fingerprint}
    _claim_folder(out, config)

    torch.manual_seed(options.seed)
    model = MotifRewardModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=options.lr)
    rows: list[dict[str, float]] = []
    start_epoch = 1
    state_path = out / artifacts.STATE_FILE
    if state_path.exists():
        state = torch.load(state_path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        rows = state["metrics"]
        start_epoch = state["epoch"] + 1
        for row in rows:
            if on_epoch is not None:
                on_epoch(row)

    table = data.table.to(device) if device.type == "cuda" else data.table
    batches = math.ceil(len(data.train) / options.batch_size)
    for epoch in range(start_epoch, options.epochs + 1):
        row = _train_epoch(model, optimizer, data, table, epoch, options, device, batches, on_batch)
        row.update(evaluate(model, data, data.val, device))
        rows.append(row)
        artifacts.write_csv(out / artifacts.METRICS_FILE, METRIC_COLUMNS, [[r[c] for c in METRIC_COLUMNS] for r in rows])
        artifacts.save_torch(state_path, {"epoch": epoch, "model": model.state_dict(),
                                          "optimizer": optimizer.state_dict(), "metrics": rows})
        if on_epoch is not None:
            on_epoch(row)

    mean, var, count, n_unique, z_unique = reward_statistics(model, data, device)
    if var <= 0:
        raise DataError("the trained reward model gives every training message the same reward",
                        hint="check the labels, or train longer / with a larger --lr")
    last = rows[-1]
    # what the model was made from: the labels by digest and the pairs' collection (its policy checkpoint by
    # sha256), so a run's record can name them through the model (``Motif.artefact_origins``)
    summary = {"dataset": data.fingerprint["dataset"], "annotation": annotation,
               "labels_sha256": data.fingerprint["labels_sha256"], "collection": data.collection,
               # null, not NaN (which strict JSON readers refuse), where a dataset has no game score to agree with
               "final": {k: None if math.isnan(last[k]) else last[k]
                         for k in ("val_loss", "val_accuracy", "val_score_agreement")}}
    artifacts.save_reward_model(out, model.cpu(), mean, var, count, n_unique, z_unique, summary)
    state_path.unlink(missing_ok=True)
    return json.loads((out / artifacts.MANIFEST_FILE).read_text())


def _train_epoch(model, optimizer, data: PreparedData, table: torch.Tensor, epoch: int,
                 options: RewardTrainingOptions, device: torch.device, batches: int,
                 on_batch: BatchCallback | None) -> dict[str, float]:
    import time

    started = time.perf_counter()
    generator = torch.Generator().manual_seed(options.seed * 1_000_003 + epoch)
    order = data.train[torch.randperm(len(data.train), generator=generator)]
    loss_sum = 0.0
    correct = total = 0
    model.train()
    for b in range(batches):
        index = order[b * options.batch_size : (b + 1) * options.batch_size]
        labels = data.labels[index].to(device)
        rewards = pair_rewards(model, table, data.pairs[index].to(table.device), device)
        loss = preference_loss(rewards, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += float(loss.detach()) * len(index)
        c, t = non_tie_accuracy(rewards.detach(), labels)
        correct, total = correct + c, total + t
        if on_batch is not None:
            on_batch(epoch, b + 1, batches)
    seconds = time.perf_counter() - started
    return {"epoch": epoch, "train_loss": loss_sum / len(order), "train_accuracy": correct / total if total else math.nan,
            "seconds": round(seconds, 3), "pairs_per_second": round(len(order) / max(seconds, 1e-9), 1)}


def _claim_folder(out: Path, config: dict[str, Any]) -> None:
    """Write config.json, or check that an unfinished run in ``out`` had the same config."""
    path = out / artifacts.CONFIG_FILE
    if path.exists():
        previous = json.loads(path.read_text())
        if previous != json.loads(json.dumps(config)):
            raise ConfigError(f"{out} holds an unfinished reward-model run with other options or data",
                              hint="rerun with the same options to resume, or choose another --out")
        return
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty and holds no reward-model run", hint="choose another --out")
    atomic_write_json(path, config)
