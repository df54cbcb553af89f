"""Finding, loading and checking sample-factory checkpoints of our runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmexplore.errors import ConfigError

if TYPE_CHECKING:
    import torch

CHECKPOINT_GLOB = "checkpoint_p0/checkpoint_*.pth"
_NAME = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")
#: key of our state (task, method, the method's state) inside sample-factory checkpoints
CHECKPOINT_KEY = "llmexplore"

#: parts of sample-factory's shared-weights actor-critic that fine-tuning can re-initialise
POLICY_PARTS = {
    "encoder": "encoder",
    "core": "core",
    "decoder": "decoder",
    "critic": "critic_linear",
    "action_head": "action_parameterization",
}


def sf_experiment_dir(run_dir: str | Path) -> Path:
    """sample-factory's experiment folder inside a run directory (``<run>/sf``)."""
    return Path(run_dir) / "sf"


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temp files of an interrupted save skipped)."""
    found = [p for p in sf_experiment_dir(run_dir).glob(CHECKPOINT_GLOB) if _NAME.search(p.name)]
    return sorted(found, key=lambda p: (int(_NAME.search(p.name).group(1)), p.name))


def checkpoint_env_steps(path: str | Path) -> int:
    """The env steps a checkpoint was saved at, read from its file name."""
    match = _NAME.search(Path(path).name)
    if not match:
        raise ValueError(f"not a checkpoint file name: {path}")
    return int(match.group(2))


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint of a run, or None before the first save."""
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def remove_partial_saves(run_dir: str | Path) -> None:
    """A kill during saving leaves ``checkpoint_temp``; sample-factory would sort it last and load it."""
    folder = sf_experiment_dir(run_dir) / "checkpoint_p0"
    for stale in folder.glob("*_temp"):
        stale.unlink()


def load_checkpoint_file(path: str | Path, device: Any = "cpu") -> dict[str, Any]:
    """Our own checkpoints hold numpy scalars, so torch >= 2.6's weights-only load refuses them."""
    try:
        import torch  # here, not at the top: validating a grid needs this module but not torch

        return torch.load(str(path), map_location=device, weights_only=False)
    except FileNotFoundError:
        raise ConfigError(f"checkpoint not found: {path}") from None
    except Exception as exc:
        raise ConfigError(f"cannot read checkpoint {path}: {exc}") from exc


def reset_policy_parts(actor_critic: "torch.nn.Module", parts: tuple[str, ...] | list[str]) -> None:
    """Re-initialise the named parts (``POLICY_PARTS`` keys) of a policy, for fine-tuning."""
    for part in parts:
        module = getattr(actor_critic, POLICY_PARTS[part])
        for layer in module.modules():
            if hasattr(layer, "reset_parameters"):
                layer.reset_parameters()


#: prefix given to a checkpoint that cannot be read, so that nothing (sample-factory's ``checkpoint_*``
#: listing included) loads it, and nothing is deleted
UNREADABLE_PREFIX = "unreadable-"


def newest_readable_checkpoint(run_dir: str | Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest checkpoint that loads, and the newer ones that did not, with why.

    A checkpoint cut short (a full disk, a kill during a copy) would make the resume fail; it is
    renamed with ``UNREADABLE_PREFIX`` (kept for inspection, no longer listed) and the one before
    it is tried, so the caller can say which it skipped.
    """
    skipped: list[tuple[Path, str]] = []
    for path in reversed(list_checkpoints(run_dir)):
        try:
            import torch

            data = torch.load(str(path), map_location="cpu", weights_only=False)
            if not isinstance(data, dict) or "model" not in data:
                raise ValueError("it holds no model weights")
        except Exception as exc:  # any failure to load means this one cannot be resumed from
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            aside = path.with_name(UNREADABLE_PREFIX + path.name)
            path.rename(aside)
            skipped.append((aside, reason))
            continue
        return path, skipped
    return None, skipped
