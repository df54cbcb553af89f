"""Finding, loading and checking sample-factory checkpoints of our runs.

A checkpoint is trusted only when it is the file that was saved, holds finite weights and belongs to this
run. Each save leaves a digest beside the checkpoint (``digest-<name>.sha256``, in ``sha256sum`` format),
checked before torch unpickles the file: a sidecar, not an entry inside, because the bytes must be known
good before anything in them is read, and sample-factory's own save (a temp file renamed into place) stays
as it is. The name starts with ``digest-`` because sample-factory lists, keeps two of and loads from every
``checkpoint_*`` file of the folder. A checkpoint written before digests existed is taken without one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from llmexplore.atomic import atomic_write_text, file_sha256
from llmexplore.errors import ConfigError

if TYPE_CHECKING:
    import torch

CHECKPOINT_GLOB = "checkpoint_p0/checkpoint_*.pth"
_NAME = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")
#: key of our state (task, method, the method's state) inside sample-factory checkpoints
CHECKPOINT_KEY = "llmexplore"
#: key, inside our state, of the identity of the run that saved it (``ResolvedRun.identity``)
RUN_IDENTITY_KEY = "run"
#: prefix and suffix of the digest file saved beside each checkpoint
DIGEST_PREFIX, DIGEST_SUFFIX = "digest-", ".sha256"

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


class CorruptCheckpoint(ValueError):
    """A checkpoint that loads, or would, but must not be used: changed after its save, non-finite weights,
    or another run's."""


def load_checkpoint_file(path: str | Path, device: Any = "cpu") -> dict[str, Any]:
    """A checkpoint's contents, refused with a ``ConfigError`` naming the file when its digest differs
    (checked before unpickling) or a weight or optimizer value is NaN or infinite. Our checkpoints hold numpy
    scalars, so torch >= 2.6's weights-only load refuses them."""
    try:
        return _checked_load(Path(path), device, None)
    except FileNotFoundError:
        raise ConfigError(f"checkpoint not found: {path}") from None
    except CorruptCheckpoint as exc:
        raise ConfigError(f"checkpoint {path} is corrupt: {exc}",
                          hint="use an earlier checkpoint of the run, or train it again") from None
    except Exception as exc:
        raise ConfigError(f"cannot read checkpoint {path}: {exc}") from exc


def _checked_load(path: Path, device: Any, identity: Mapping[str, Any] | None) -> dict[str, Any]:
    """The checkpoint's contents; ``CorruptCheckpoint`` for a failed check (belonging to the run ``identity``
    too, when given), any other exception where it cannot be read."""
    check_checkpoint_digest(path)
    import torch  # here, not at the top: validating a grid needs this module but not torch

    data = torch.load(str(path), map_location=device, weights_only=False)
    if isinstance(data, dict):
        problem = non_finite_problem(data)
        if problem is None and identity is not None:
            problem = identity_problem(data, identity)
        if problem:
            raise CorruptCheckpoint(problem)
    return data


# -- digests -------------------------------------------------------------------------------------------
def digest_path(checkpoint: str | Path) -> Path:
    """The digest file saved beside a checkpoint."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{DIGEST_PREFIX}{checkpoint.name}{DIGEST_SUFFIX}")


def write_checkpoint_digest(checkpoint: str | Path) -> Path:
    """Save a just-saved checkpoint's SHA-256 beside it (atomically), and drop the digests of checkpoints
    sample-factory has since removed (it keeps the newest two). Returns the digest file."""
    checkpoint = Path(checkpoint)
    target = digest_path(checkpoint)
    atomic_write_text(target, f"{file_sha256(checkpoint)}  {checkpoint.name}\n")
    for stale in checkpoint.parent.glob(f"{DIGEST_PREFIX}*{DIGEST_SUFFIX}"):
        saved_for = stale.name[len(DIGEST_PREFIX):-len(DIGEST_SUFFIX)]
        if not (checkpoint.parent / saved_for).exists():
            stale.unlink(missing_ok=True)
    return target


def check_checkpoint_digest(checkpoint: Path) -> None:
    """Raise ``CorruptCheckpoint`` when the checkpoint's bytes differ from those its save recorded; a
    checkpoint without a digest (an older version's) passes. Reads the bytes only, never unpickles them."""
    recorded = digest_path(checkpoint)
    if not recorded.exists():
        return
    try:
        expected = recorded.read_text().split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        expected = "(unreadable)"
    if file_sha256(checkpoint) != expected:
        raise CorruptCheckpoint(f"its SHA-256 differs from the one recorded at its save in {recorded.name}: "
                                "the file changed after it was saved")


# -- contents ------------------------------------------------------------------------------------------
def non_finite_problem(data: Mapping[str, Any]) -> str | None:
    """Which weights or optimizer values are NaN or infinite, or None: resuming from them fails the run, and
    every rerun would fail the same way."""
    import torch

    bad = [name for part in ("model", "optimizer")
           for name, tensor in _named_tensors(data.get(part), part)
           if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if not bad:
        return None
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    return f"NaN or infinite values in {', '.join(bad[:3])}{more}"


def _named_tensors(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    """Every tensor in a nested state (a state dict, an optimizer's state), with its dotted name."""
    import torch

    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _named_tensors(item, f"{name}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _named_tensors(item, f"{name}.{index}")


def identity_problem(data: Mapping[str, Any], identity: Mapping[str, Any]) -> str | None:
    """Why a checkpoint is not this run's (``identity``: ``ResolvedRun.identity``), or None. A checkpoint of
    an older version names only its task and method; a field this run has and the checkpoint lacks (an option
    a later version added) is not a difference."""
    ours = data.get(CHECKPOINT_KEY)
    if not isinstance(ours, Mapping):
        return f"it holds no '{CHECKPOINT_KEY}' entry, so no run of llmexplore saved it"
    recorded = ours.get(RUN_IDENTITY_KEY) or {"task": ours.get("task"), "method": ours.get("method")}
    now = dict(_flat(identity))
    differences = [f"{key}: {value!r} in the checkpoint, {now.get(key, '(absent)')!r} in this run"
                   for key, value in _flat(recorded) if key not in now or now[key] != value]
    return f"it belongs to another run ({'; '.join(differences[:3])})" if differences else None


def _flat(fields: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in fields.items():
        if isinstance(value, Mapping) and value:
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


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
#: prefix given to a checkpoint that reads but must not be used (``CorruptCheckpoint``), for the same reasons
CORRUPT_PREFIX = "corrupt-"


def newest_readable_checkpoint(run_dir: str | Path, identity: Mapping[str, Any] | None = None,
                               ) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest checkpoint that loads and passes its checks, and the newer ones set aside, with why.

    A checkpoint cut short (a full disk, a kill during a copy) would make the resume fail, and a corrupt one
    (``load_checkpoint_file``'s checks; belonging to the run ``identity`` when given) would fail it or train
    on what is not this run; each is renamed with ``UNREADABLE_PREFIX`` or ``CORRUPT_PREFIX`` (its digest
    too: kept for inspection, no longer listed) and the one before it is tried, so the caller can say which
    it skipped.
    """
    skipped: list[tuple[Path, str]] = []
    for path in reversed(list_checkpoints(run_dir)):
        try:
            data = _checked_load(path, "cpu", identity)
            if not isinstance(data, dict) or "model" not in data:
                raise ValueError("it holds no model weights")
        except Exception as exc:  # any failure to load means this one cannot be resumed from
            corrupt = isinstance(exc, CorruptCheckpoint)
            reason = str(exc) if corrupt else f"{type(exc).__name__}: {str(exc)[:200]}"
            skipped.append((set_aside(path, CORRUPT_PREFIX if corrupt else UNREADABLE_PREFIX), reason))
            continue
        return path, skipped
    return None, skipped


def set_aside(checkpoint: Path, prefix: str) -> Path:
    """Rename a checkpoint and its digest with ``prefix`` (never delete them); returns the checkpoint's new
    path."""
    digest = digest_path(checkpoint)
    if digest.exists():
        digest.rename(digest.with_name(prefix + digest.name))
    aside = checkpoint.with_name(prefix + checkpoint.name)
    checkpoint.rename(aside)
    return aside


def describe_set_aside(aside: Path, why: str) -> str:
    """A line naming a checkpoint ``set_aside`` renamed, why, and where it is kept."""
    for prefix, kind in ((UNREADABLE_PREFIX, "unreadable"), (CORRUPT_PREFIX, "corrupt")):
        if aside.name.startswith(prefix):
            return (f"skipped {kind} checkpoint {aside.name[len(prefix):]} ({why}); "
                    f"kept as {aside.name} in {aside.parent}")
    return f"skipped checkpoint {aside} ({why})"
