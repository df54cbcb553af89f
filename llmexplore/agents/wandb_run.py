"""Weights & Biases logging of a run, started by us rather than by sample-factory.

sample-factory 2.1.1 starts W&B with ``wandb.Settings(start_method="fork")``, a setting
wandb has since removed (0.31 rejects it), so its ``with_wandb`` option crashes. We start the W&B run
ourselves, before sample-factory creates its TensorBoard writers, with ``sync_tensorboard``:
every TensorBoard scalar (sample-factory's and ours, keyed by env steps) reaches W&B.
The run id is kept in the run folder, so a resumed run continues the same W&B run;
``WANDB_MODE=offline`` writes ``<run>/wandb/offline-run-*`` for a later ``wandb sync``.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from llmexplore.errors import ConfigError

ID_FILE = "wandb-id.txt"
PROJECT = "llmexplore"


def uses_wandb(train: Any) -> bool:
    """``train.wandb``, or sample-factory's own switch ``sf_args.with_wandb``: both start our W&B run."""
    return bool(train.wandb or train.sf_args.get("with_wandb"))


def start_wandb(run_dir: str | Path, task: str, method: str, seed: int, config: dict[str, Any],
                project: str | None = None, quiet: bool = False) -> Any:
    """Start (or resume) the run's W&B run; returns it, to be finished with :func:`finish_wandb`.
    ``quiet`` silences W&B's console output, as ``llmexplore run --quiet`` asks (unless WANDB_SILENT is set)."""
    try:
        import wandb
    except ImportError:
        raise ConfigError("train.wandb needs the wandb package", hint="pip install 'llmexplore[tracking]'") from None
    if quiet:
        os.environ.setdefault("WANDB_SILENT", "true")
    run_dir = Path(run_dir)
    id_file = run_dir / ID_FILE
    if id_file.exists():
        run_id = id_file.read_text().strip()
    else:
        run_id = f"{method}-{seed}-{uuid.uuid4().hex[:8]}"
        id_file.write_text(run_id + "\n")
    return wandb.init(project=project or os.environ.get("WANDB_PROJECT") or PROJECT, group=task,
                      name=f"{method}/{task}/seed{seed}", id=run_id, resume="allow",
                      dir=os.environ.get("WANDB_DIR") or str(run_dir), sync_tensorboard=True, config=config,
                      job_type="train")


def finish_wandb(run: Any, failed: bool = False) -> None:
    if run is not None:
        run.finish(exit_code=1 if failed else 0)
