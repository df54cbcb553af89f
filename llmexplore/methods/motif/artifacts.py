"""The reward-model folder: what ``motif train-reward`` leaves and the ``motif`` method loads.

    <dir>/config.json        training options, dataset, annotation, split sizes
    <dir>/metrics.csv        one row per epoch (losses, accuracies, score agreement)
    <dir>/reward_model.pt    weights and architecture name
    <dir>/reward_stats.json  mean and variance of r over training observations (each
                             occurrence counts: frequency-weighted), their count, the
                             number of unique training messages
    <dir>/quantiles.csv      quantile,value: quantiles of the z-scored reward over unique
                             training messages at 0, 0.05, ..., 0.95, 1 (0 and 1 are the
                             min and max, so any quantile in (0, 1) interpolates)
    <dir>/manifest.json      written last: the folder is complete; holds a model id
    <dir>/train_state.pt     only while training: the resumable checkpoint

Every file belongs to one training run; nothing is appended across runs (the published
code appended quantile rows to a shared CSV and read the last one).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from llmexplore.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from llmexplore.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover (torch loads where weights are read or written, not to check a folder)
    import torch

    from llmexplore.methods.motif.model import MotifRewardModel

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.csv"
WEIGHTS_FILE = "reward_model.pt"
STATS_FILE = "reward_stats.json"
QUANTILES_FILE = "quantiles.csv"
MANIFEST_FILE = "manifest.json"
STATE_FILE = "train_state.pt"
REQUIRED_FILES = (WEIGHTS_FILE, STATS_FILE, QUANTILES_FILE, MANIFEST_FILE)
#: the published grid plus the extremes
QUANTILE_GRID = tuple([0.0] + [round(q / 100, 2) for q in range(5, 96, 5)] + [1.0])
FORMAT_VERSION = 1


def save_torch(path: Path, obj: Any) -> None:
    """``torch.save`` into memory, then an atomic write: a crash never leaves half a file."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A header row and the rows as CSV, written atomically."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    atomic_write_text(path, out.getvalue())


def quantile_table(z_unique: np.ndarray) -> list[tuple[float, float]]:
    """(quantile, value) of the z-scored rewards of unique messages at every
    ``QUANTILE_GRID`` point (0, 0.05, ..., 0.95, 1; the ends are min and max)."""
    values = np.quantile(np.asarray(z_unique, dtype=np.float64), QUANTILE_GRID)
    return [(q, float(v)) for q, v in zip(QUANTILE_GRID, values)]


def interpolate_quantile(table: Sequence[tuple[float, float]], q: float) -> float:
    """The reward at quantile q, linear between the saved grid points."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    qs = np.array([p for p, _ in table])
    vs = np.array([v for _, v in table])
    if q < qs[0] or q > qs[-1]:
        raise ValueError(f"quantile {q} outside the saved range [{qs[0]}, {qs[-1]}]")
    return float(np.interp(q, qs, vs))


def save_reward_model(out: Path, model: MotifRewardModel, mean: float, var: float, count: int,
                      unique_messages: int, z_unique: np.ndarray, summary: dict[str, Any]) -> str:
    """Write weights, stats and quantiles, then the manifest (the completeness marker)."""
    from llmexplore.methods.motif.model import ARCHITECTURE

    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    save_torch(out / WEIGHTS_FILE, {"format": FORMAT_VERSION, "architecture": ARCHITECTURE, "state_dict": state})
    atomic_write_json(out / STATS_FILE, {"mean": mean, "var": var, "std": float(np.sqrt(var)),
                                         "observations": count, "unique_messages": unique_messages})
    write_csv(out / QUANTILES_FILE, ["quantile", "value"], quantile_table(z_unique))
    digest = hashlib.sha256((out / WEIGHTS_FILE).read_bytes() + (out / STATS_FILE).read_bytes()).hexdigest()[:16]
    atomic_write_json(out / MANIFEST_FILE, {"format": FORMAT_VERSION, "architecture": ARCHITECTURE,
                                            "model_id": digest, "files": list(REQUIRED_FILES[:-1]), **summary})
    return digest


def reward_model_origin(path: str | Path) -> dict[str, Any]:
    """What a reward-model folder says it was made from (its manifest's annotation, labels digest and the
    pairs' collection record); {} when the manifest is unreadable or older than these keys."""
    try:
        manifest = json.loads((Path(path).expanduser() / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(manifest, dict) or "collection" not in manifest:
        return {}
    return {k: manifest[k] for k in ("annotation", "labels_sha256", "collection") if k in manifest}


@dataclass
class LoadedRewardModel:
    model: MotifRewardModel
    mean: float
    std: float
    quantiles: list[tuple[float, float]]
    model_id: str
    path: Path

    def threshold(self, quantile: float) -> float:
        """The z-scored reward at ``quantile``, linear between the saved grid points; ValueError outside [0, 1]."""
        return interpolate_quantile(self.quantiles, quantile)


def check_reward_model_dir(path: str | Path) -> Path:
    """Stop early, naming what is missing, unless ``path`` is a complete reward-model folder."""
    path = Path(path).expanduser()
    hint = ("train one with `llmexplore motif train-reward --dataset DIR --annotation NAME --out DIR`; "
            "scripts/motif_pipeline.sh builds the ones configs/motif.yaml uses (docs/MOTIF.md)")
    if not path.is_dir():
        raise ConfigError(f"reward-model folder {path} does not exist", hint=hint)
    missing = [f for f in REQUIRED_FILES if not (path / f).is_file()]
    if missing:
        note = " (training has not finished; rerun the same command to resume)" if (path / STATE_FILE).exists() else ""
        raise ConfigError(f"reward-model folder {path} is incomplete: missing {', '.join(missing)}{note}", hint=hint)
    return path


def load_reward_model(path: str | Path, device: str | torch.device = "cpu") -> LoadedRewardModel:
    """The frozen model (eval mode, no gradients, on ``device``) with its saved mean, std,
    quantiles and id; ConfigError when the folder is incomplete, unreadable or inconsistent."""
    import torch

    from llmexplore.methods.motif.model import ARCHITECTURE, MotifRewardModel

    path = check_reward_model_dir(path)
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text())
        stats = json.loads((path / STATS_FILE).read_text())
        with open(path / QUANTILES_FILE, newline="") as fh:
            rows = list(csv.reader(fh))
        quantiles = [(float(q), float(v)) for q, v in rows[1:]]
        saved = torch.load(path / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    except (OSError, ValueError, KeyError, RuntimeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"reward-model folder {path} is unreadable: {exc}") from None
    if saved.get("architecture") != ARCHITECTURE:
        raise ConfigError(f"{path / WEIGHTS_FILE}: architecture {saved.get('architecture')!r}, expected {ARCHITECTURE!r}")
    if len(quantiles) < 2 or quantiles[0][0] != 0.0 or quantiles[-1][0] != 1.0:
        raise ConfigError(f"{path / QUANTILES_FILE}: expected quantiles from 0 to 1")
    model = MotifRewardModel()
    try:
        model.load_state_dict(saved["state_dict"])
    except RuntimeError as exc:
        raise ConfigError(f"{path / WEIGHTS_FILE}: weights do not fit the reward model ({exc})") from None
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    std = float(stats["std"])
    if not std > 0:
        raise ConfigError(f"{path / STATS_FILE}: reward std is {std}; the model gives every message one reward")
    return LoadedRewardModel(model, float(stats["mean"]), std, quantiles, manifest["model_id"], path)
