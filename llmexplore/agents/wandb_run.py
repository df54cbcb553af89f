"""Weights & Biases logging of a run, started by us rather than by sample-factory.

sample-factory 2.1.1 starts W&B with ``wandb.Settings(start_method="fork")``, a setting
wandb has since removed (0.31 rejects it), so its ``with_wandb`` option crashes. We start the W&B run
ourselves, and every TensorBoard scalar written in this process (sample-factory's ``train/*``,
``perf/*``, ``stats/*``..., and ours: ``llmexplore/*``, ``method/*``, ``benchmark/*``) is also
logged through ``wandb.log`` the moment it is written, keyed by env steps (``env_steps`` is the
x-axis of every chart). W&B's ``sync_tensorboard`` is not used: it reads the event files as they
are flushed, so what it kept depended on timing (a short run kept only some groups, or none).
The rows are flushed when the run finishes. The run id is kept in the run folder, so a resumed
run continues the same W&B run; ``WANDB_MODE=offline`` writes ``<run>/wandb/offline-run-*`` for a
later ``wandb sync``.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any, Callable

from llmexplore.errors import ConfigError

ID_FILE = "wandb-id.txt"
PROJECT = "llmexplore"
#: the x-axis of every scalar in W&B
STEP_KEY = "env_steps"
#: id of a started W&B run -> what forwards this process's TensorBoard scalars to it (wandb's Run takes no attributes)
_FORWARDERS: dict[int, "ScalarForwarder"] = {}


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
    run = wandb.init(project=project or os.environ.get("WANDB_PROJECT") or PROJECT, group=task,
                     name=f"{method}/{task}/seed{seed}", id=run_id, resume="allow",
                     dir=os.environ.get("WANDB_DIR") or str(run_dir), config=config, job_type="train")
    run.define_metric(STEP_KEY)
    run.define_metric("*", step_metric=STEP_KEY)
    _FORWARDERS[id(run)] = ScalarForwarder(run.log).install()
    return run


def finish_wandb(run: Any, failed: bool = False) -> None:
    """Log what is buffered, stop forwarding, and finish the run (which flushes it to W&B or the offline file)."""
    if run is not None:
        forwarder = _FORWARDERS.pop(id(run), None)
        if forwarder is not None:
            forwarder.uninstall()
        run.finish(exit_code=1 if failed else 0)


class ScalarForwarder:
    """Sends every ``tensorboardX.SummaryWriter.add_scalar`` of this process to ``log`` as well.

    Scalars of one env step go out as one row ``{env_steps: s, tag: value, ...}``; a row is sent when
    the step changes or a tag repeats within it (two episodes ending at the same step), so no value
    is overwritten, whatever order the writers use.
    """

    def __init__(self, log: Callable[[dict[str, Any]], None]):
        self.log = log
        self._row: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._original: Callable[..., Any] | None = None

    def add(self, tag: str, value: Any, step: Any) -> None:
        """Queue one TensorBoard scalar for W&B; the scalars of one env step go as one row."""
        try:
            number, steps = float(value), int(step)
        except (TypeError, ValueError):
            return  # not a plain scalar (a tensor of several values): TensorBoard keeps it, W&B need not
        with self._lock:
            if self._row and (self._row[STEP_KEY] != steps or tag in self._row):
                self._send()
            self._row.setdefault(STEP_KEY, steps)
            self._row[tag] = number

    def flush(self) -> None:
        """Send the scalars queued so far."""
        with self._lock:
            if self._row:
                self._send()

    def _send(self) -> None:
        row, self._row = self._row, {}
        self.log(row)

    def install(self) -> "ScalarForwarder":
        """Forward every ``SummaryWriter.add_scalar`` of this process to W&B from now on."""
        from tensorboardX import SummaryWriter

        original = SummaryWriter.add_scalar
        forwarder = self

        def add_scalar(writer: Any, tag: str, scalar_value: Any, global_step: Any = None, *args: Any,
                       **kwargs: Any) -> Any:
            result = original(writer, tag, scalar_value, global_step, *args, **kwargs)
            if global_step is not None:
                forwarder.add(tag, scalar_value, global_step)
            return result

        self._original = original
        SummaryWriter.add_scalar = add_scalar  # type: ignore[method-assign]
        return self

    def uninstall(self) -> None:
        """Send what is queued and stop forwarding."""
        self.flush()
        if self._original is not None:
            from tensorboardX import SummaryWriter

            SummaryWriter.add_scalar = self._original  # type: ignore[method-assign]
            self._original = None
