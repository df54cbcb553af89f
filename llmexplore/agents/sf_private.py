"""Every piece of sample-factory that llmexplore overrides or reaches into, in one module.

sample-factory 2.1.1 offers no hook for what our learner adds (a method's state in checkpoints,
returns that end inside an episode, our own learner worker, a stop with a checkpoint), so we
override or reach into parts that are not its public API. They are all named here, in
``PIECES``, and used only through the classes and functions below: the rest of llmexplore
sees our own hook names. ``PIECES`` also names the public methods our subclasses override and
the attributes they set (``Learner.train``, ``Runner.status``, ...): a release that renames one
would otherwise leave our override uncalled, silently (``tests/unit/test_sf_overrides.py`` reads
our subclasses and fails when one overrides or sets a piece not listed here). ``check_sample_factory()`` runs when training starts and in
tests/unit/test_sf_private.py; it fails with a message naming each piece that differs and the
one sample-factory version this was written against, so an upgrade breaks loudly at the start
instead of silently mid-run. The changes sample-factory needs on newer packages (numpy 2.4,
huggingface-hub 1.0) live beside this module, in sf_compat.py; the same check applies them and names
any that fails.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Literal

from llmexplore.errors import UserError

#: the sample-factory release these pieces were read from (scripts/setup.sh installs it)
SUPPORTED_VERSION = "2.1.1"
#: how to install it: without its metadata's pins, which today's numpy, gymnasium and NLE break
INSTALL_COMMAND = f"pip install --no-deps sample-factory=={SUPPORTED_VERSION}"


class SampleFactoryMissing(UserError):
    """sample-factory is not installed (``pip install -e .`` leaves it out: docs/INSTALL.md)."""


try:
    from sample_factory.algo.learning.learner import Learner
    from sample_factory.algo.learning.learner_worker import LearnerWorker
    from sample_factory.utils.utils import log
except ModuleNotFoundError as exc:
    if (exc.name or "").split(".")[0] != "sample_factory":
        raise
    raise SampleFactoryMissing("sample-factory, the RL engine llmexplore trains with, is not installed",
                               hint=f"{INSTALL_COMMAND} (scripts/setup.sh does it; see docs/INSTALL.md)") from exc

from llmexplore.agents import sf_compat
from llmexplore.agents.checkpoints import write_checkpoint_digest


@dataclass(frozen=True)
class PrivatePiece:
    """One part of sample-factory we depend on although it is not its public API."""

    #: ``module:Class`` that defines it
    owner: str
    #: attribute or method name
    name: str
    #: "method": checked by its parameter names; "attribute": by the owner's source assigning it;
    #: "signal": a signal_slot signal the owner declares
    kind: Literal["method", "attribute", "signal"]
    #: what we rely on: the parameter names of a method, empty for an attribute or signal
    parameters: tuple[str, ...]
    #: why we need it, and where it is used
    why: str
    #: True: a private part, reached only through this module; False: a public method our subclasses
    #: override, or an attribute they set, under sample-factory's own name
    private: bool = True

    @property
    def label(self) -> str:
        """``Class.name``, as messages name the piece."""
        return f"{self.owner.split(':')[1]}.{self.name}"


_LEARNER = "sample_factory.algo.learning.learner:Learner"
_WORKER = "sample_factory.algo.learning.learner_worker:LearnerWorker"
_RUNNER = "sample_factory.algo.runners.runner:Runner"

PIECES: tuple[PrivatePiece, ...] = (
    PrivatePiece(_LEARNER, "__init__", "method",
                 ("self", "cfg", "env_info", "policy_versions_tensor", "policy_id", "param_server"),
                 "our learner worker builds our learner in place of sample-factory's (LearnerHooks' worker)"),
    PrivatePiece(_LEARNER, "_get_checkpoint_dict", "method", ("self",),
                 "checkpoints also hold the task, the method and the method's state (add_to_checkpoint)"),
    PrivatePiece(_LEARNER, "_save_impl", "method",
                 ("self", "name_prefix", "name_suffix", "keep_checkpoints", "verbose"),
                 "each checkpoint saved gets its digest beside it (after_checkpoint_saved; "
                 "saved_checkpoint_path repeats the file name it gives)"),
    PrivatePiece(_LEARNER, "checkpoint_dir", "method", ("cfg", "policy_id"),
                 "the folder _save_impl saves into (saved_checkpoint_path)"),
    PrivatePiece(_LEARNER, "_load_state", "method", ("self", "checkpoint_dict", "load_progress"),
                 "a resumed run loads the method's state back (after_state_loaded)"),
    PrivatePiece(_LEARNER, "_prepare_batch", "method", ("self", "batch"),
                 "returns that end inside an episode reach GAE only (prepare_batch)"),
    PrivatePiece(_LEARNER, "_calculate_losses", "method", ("self", "mb", "num_invalids"),
                 "two reward streams add the intrinsic value head's loss to the value loss (calculate_losses)"),
    PrivatePiece(_LEARNER, "_value_loss", "method",
                 ("self", "new_values", "old_values", "target", "clip_value", "valids", "num_invalids"),
                 "the intrinsic value head's loss is the extrinsic head's, clipped alike (value_loss)"),
    PrivatePiece(_LEARNER, "timing", "attribute", (),
                 "the learner's profile timers also time the intrinsic reward and the method's update"),
    PrivatePiece(_WORKER, "param_server", "attribute", (),
                 "handed to our learner, as sample-factory's worker hands it to its own"),
    PrivatePiece(_WORKER, "report_msg", "signal", (),
                 "the learner's last metrics row when training stops (send_report)"),
    PrivatePiece(_RUNNER, "_make_learner", "method", ("self", "event_loop", "policy_id", "batcher"),
                 "the runners build our learner worker (RunnerHooks.make_learner_worker)"),
    PrivatePiece(_RUNNER, "_stop_training", "method", ("self", "failed"),
                 "stop at the budget or on Ctrl-C with a checkpoint (stop_training), and stop the watchdog "
                 "first (RunnerHooks.before_stop_training)"),
    PrivatePiece(_RUNNER, "policy_msg_handlers", "attribute", (),
                 "episode and learner reports reach our sinks; register_policy_msg_handler would replace "
                 "sample-factory's own handler list (add_policy_msg_handler)"),
    PrivatePiece(_RUNNER, "learners", "attribute", (),
                 "in serial mode the learner is asked for its step count and saved on Ctrl-C (runner_learners)"),
    PrivatePiece("sample_factory.algo.runners.runner_parallel:ParallelRunner", "processes", "attribute", (),
                 "the watchdog fails a run whose learner process died (child_processes)"),
    PrivatePiece("sample_factory.algo.sampling.sampler:ParallelSampler", "processes", "attribute", (),
                 "the watchdog fails a run whose rollout or inference process died (child_processes)"),
    PrivatePiece("argparse:_ActionsContainer", "_actions", "attribute", (),
                 "the names sample-factory's parser accepts, to refuse unknown sf_args early (option_names)"),
    *(PrivatePiece(owner, name, kind, parameters, why, private=False) for owner, name, kind, parameters, why in (
        (_LEARNER, "init", "method", ("self",),
         "IntrinsicLearner.init builds the run's method before sample-factory's set-up"),
        (_LEARNER, "load_checkpoint", "method", ("checkpoints", "device"),
         "IntrinsicLearner.load_checkpoint (a staticmethod) reads checkpoints holding numpy values"),
        (_LEARNER, "load_from_checkpoint", "method", ("self", "policy_id", "load_progress"),
         "IntrinsicLearner.load_from_checkpoint starts a fine-tuning run from its parent's policy"),
        (_LEARNER, "train", "method", ("self", "batch"),
         "IntrinsicLearner.train puts the method's reward into the batch before PPO"),
        (_LEARNER, "save", "method", ("self",), "an interrupted serial run is checkpointed (training.py)"),
        (_LEARNER, "env_steps", "attribute", (), "the learner's count: budget, reports, checkpoints"),
        (_WORKER, "__init__", "method", ("self", "evt_loop", "cfg", "env_info", "buffer_mgr", "batcher", "policy_id"),
         "LearnerWorkerHooks builds our learner after sample-factory's worker set-up"),
        (_WORKER, "learner", "attribute", (), "LearnerWorkerHooks replaces the worker's learner by ours"),
        (_WORKER, "on_stop", "method", ("self", "args"),
         "IntrinsicLearnerWorker.on_stop sends the last metrics row and closes the method"),
        (_RUNNER, "init", "method", ("self",), "ParallelTrainer.init starts the child watchdog"),
        ("sample_factory.algo.runners.runner_parallel:ParallelRunner", "init", "method", ("self",),
         "ParallelTrainer.init calls it first"),
        (_RUNNER, "status", "attribute", (), "ParallelTrainer marks a run failed when a child process died"),
        (_RUNNER, "stopped", "attribute", (), "ParallelTrainer stops; the stop observer reads it"),
        (_RUNNER, "event_loop", "attribute", (), "the watchdog's timer runs on it; a dead child stops it"),
        (_RUNNER, "env_steps", "attribute", (), "the learner's count as the runner heard it (training_watch)"),
        ("sample_factory.algo.runners.runner:AlgoObserver", "on_training_step", "method",
         ("self", "runner", "training_iteration_since_resume"),
         "the budget's stop and the stop requests (TrainingWatch, stop_requests.StopObserver)"),
        ("sample_factory.model.encoder:Encoder", "__init__", "method", ("self", "cfg"),
         "every family network and GenericEncoder subclasses Encoder"),
        ("sample_factory.model.encoder:Encoder", "get_out_size", "method", ("self",),
         "each encoder says the width of its features"),
    )),
)


class SampleFactoryMismatch(UserError):
    """The installed sample-factory is not the one llmexplore's learner was written against."""


def installed_version() -> str:
    """sample-factory's version as pip installed it."""
    return metadata.version("sample-factory")


def piece_problem(piece: PrivatePiece) -> str | None:
    """Why the installed sample-factory lacks ``piece`` as we use it, or None when it has it."""
    module_name, class_name = piece.owner.split(":")
    try:
        owner = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        return f"{piece.owner} cannot be imported ({exc})"
    if piece.kind == "method":
        function = inspect.getattr_static(owner, piece.name, None)
        function = getattr(function, "__func__", function)  # a staticmethod or classmethod
        if not callable(function):
            return f"{piece.label} is not a method"
        found = tuple(inspect.signature(function).parameters)
        if found != piece.parameters:
            return f"{piece.label} takes ({', '.join(found)}), expected ({', '.join(piece.parameters)})"
        return None
    if piece.kind == "signal":
        declared = inspect.getattr_static(owner, piece.name, None)
        return None if type(declared).__name__ == "signal" else f"{piece.label} is not a signal"
    source = inspect.getsource(owner)
    if not re.search(rf"self\.{re.escape(piece.name)}\s*(:[^=\n]*)?=", source):
        return f"{piece.label} is no longer set by {class_name}"
    return None


def check_sample_factory() -> None:
    """Apply sample-factory's mends for the installed packages (sf_compat.py), here and in every process
    it spawns from now on, then refuse to train with a sample-factory whose private pieces differ from
    what ``PIECES`` says or whose mends are missing or no longer fit."""
    sf_compat.apply_all()
    sf_compat.carry_into_spawned_processes()
    problems = [f"{piece.label}: {problem} (used for: {piece.why})"
                for piece in PIECES if (problem := piece_problem(piece)) is not None]
    problems.extend(sf_compat.problems())
    if not sf_compat.carried_into_spawned_processes():
        problems.append("sample-factory's global context no longer carries llmexplore's mends to its processes")
    version = installed_version()
    if version != SUPPORTED_VERSION:
        problems.insert(0, f"version {version} is installed")
    if problems:
        raise SampleFactoryMismatch(
            f"llmexplore's learner relies on private parts of sample-factory {SUPPORTED_VERSION}, and the "
            "installed sample-factory differs:\n  " + "\n  ".join(problems),
            hint=f"{INSTALL_COMMAND} (or adapt llmexplore/agents/sf_private.py and sf_compat.py)")


# -- the learner's hooks ---------------------------------------------------------------------------
class LearnerHooks(Learner):
    """sample-factory's ``Learner`` with its private steps turned into hooks of ours."""

    def add_to_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Add entries to the checkpoint dict about to be saved."""

    def after_state_loaded(self, checkpoint: dict[str, Any]) -> None:
        """Called once sample-factory has loaded its own state (weights, optimizer, steps) from a checkpoint."""

    def prepare_batch(self, batch: Any, prepare: Callable[[Any], tuple[Any, int, int]]) -> tuple[Any, int, int]:
        """sample-factory's batch preparation (``prepare``: returns, advantages, flattening); wrap it to
        change what it sees. Returns (prepared buffer, experience size, number of invalid steps)."""
        return prepare(batch)

    def calculate_losses(self, mb: Any, num_invalids: int, calculate: Callable[[Any, int], tuple]) -> tuple:
        """sample-factory's losses of a minibatch (``calculate``: action distribution, policy, exploration,
        KL and value losses, summaries); wrap it to add to them."""
        return calculate(mb, num_invalids)

    def value_loss(self, new_values: Any, old_values: Any, target: Any, valids: Any, num_invalids: int) -> Any:
        """sample-factory's clipped value loss (times ``value_loss_coeff``), for a value head of ours."""
        return self._value_loss(new_values, old_values, target, self.cfg.ppo_clip_value, valids, num_invalids)

    def after_checkpoint_saved(self, path: Path) -> None:
        """Called with each checkpoint file once sample-factory has renamed it into place: saves its digest
        (checkpoints.py), so a file changed later is caught before it is loaded."""
        write_checkpoint_digest(path)

    def saved_checkpoint_path(self, name_prefix: str, name_suffix: str) -> Path:
        """The file ``_save_impl`` has just written, named as sample-factory 2.1.1 names it."""
        folder = Path(self.checkpoint_dir(self.cfg, self.policy_id))
        return folder / f"{name_prefix}_{self.train_step:09d}_{self.env_steps}{name_suffix}.pth"

    def timed(self, name: str) -> Any:
        """A context manager adding its time to the learner's profile (sf_log.txt) under ``name``."""
        return self.timing.add_time(name)

    def _get_checkpoint_dict(self):
        checkpoint = super()._get_checkpoint_dict()
        self.add_to_checkpoint(checkpoint)
        return checkpoint

    def _save_impl(self, name_prefix, name_suffix, keep_checkpoints, verbose=True) -> bool:
        saved = super()._save_impl(name_prefix, name_suffix, keep_checkpoints, verbose)
        if saved:
            path = self.saved_checkpoint_path(name_prefix, name_suffix)
            if path.is_file():
                self.after_checkpoint_saved(path)
            else:  # a sample-factory naming its files otherwise: the checkpoint stands, without a digest
                log.warning("llmexplore: saved checkpoint not found at %s; no digest written", path)
        return saved

    def _load_state(self, checkpoint_dict, load_progress=True):
        super()._load_state(checkpoint_dict, load_progress)
        self.after_state_loaded(checkpoint_dict)

    def _prepare_batch(self, batch):
        return self.prepare_batch(batch, super()._prepare_batch)

    def _calculate_losses(self, mb, num_invalids):
        return self.calculate_losses(mb, num_invalids, super()._calculate_losses)


class LearnerWorkerHooks(LearnerWorker):
    """sample-factory's learner worker, running ``learner_class`` instead of its own learner."""

    learner_class: type[Learner] = Learner

    def __init__(self, evt_loop, cfg, env_info, buffer_mgr, batcher, policy_id):
        super().__init__(evt_loop, cfg, env_info, buffer_mgr, batcher, policy_id)
        self.learner = self.learner_class(cfg, env_info, buffer_mgr.policy_versions, policy_id, self.param_server)

    def send_report(self, report: dict[str, Any]) -> None:
        """Send a message to the runner in the main process, as the worker sends its training stats."""
        self.report_msg.emit(report)


class RunnerHooks:
    """Mixin for a sample-factory runner (put it first among the bases): which learner worker it
    builds, and what happens just before it stops training."""

    learner_worker_class: type[LearnerWorker] = LearnerWorker

    def before_stop_training(self) -> None:
        """Called when training is about to stop (budget reached, a stop request, or a failure)."""

    def _make_learner(self, event_loop, policy_id, batcher):
        return self.learner_worker_class(event_loop, self.cfg, self.env_info, self.buffer_mgr, batcher, policy_id)

    def _stop_training(self, failed: bool = False) -> None:
        self.before_stop_training()
        super()._stop_training(failed)


# -- reaching into a runner ----------------------------------------------------------------------
def stop_training(runner: Any) -> None:
    """Stop the way reaching the budget does: save the policy, then stop every component."""
    runner._stop_training()


def add_policy_msg_handler(runner: Any, key: str, handler: Callable[[Any, dict, int], None]) -> None:
    """Call ``handler(runner, msg, policy_id)`` for each policy message holding ``key``, after the
    handlers already there (sample-factory's ``register_policy_msg_handler`` would replace them)."""
    runner.policy_msg_handlers.setdefault(key, []).append(handler)


def runner_learners(runner: Any) -> dict[int, Learner]:
    """The runner's learners, by policy id. Only a serial run trains with these: a parallel run's
    learners work in their own processes, and the copies here stay untrained."""
    return {policy_id: worker.learner for policy_id, worker in runner.learners.items()
            if getattr(worker, "learner", None) is not None}


def child_processes(runner: Any) -> list[Any]:
    """A parallel runner's child processes: its learners', then the sampler's (rollout, inference)."""
    return [*runner.processes, *getattr(runner.sampler, "processes", [])]


def option_names(parser: argparse.ArgumentParser) -> set[str]:
    """Every option name (its ``dest``) a parser accepts."""
    return {action.dest for action in parser._actions}
