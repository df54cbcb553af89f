"""Train one agent with sample-factory APPO and our learner.

This module knows sample-factory; it knows nothing of run records. Callers pass sinks
for episodes, intrinsic returns and progress, and get a short result back.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from llmexplore.agents.episode_ledger import EpisodeLedger
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.train_config import check_sf_args
from llmexplore.agents.sf_env import QUIET_ENV, SF_ENV_NAME, make_sf_env, quiet_sample_factory_console
from llmexplore.agents.vector_env import episode_rows, sampling_sf_args
from llmexplore.errors import ConfigError


class TrainingSink(Protocol):
    """Receives what happens during training (in the main process)."""

    def on_episode(self, row: dict[str, Any]) -> None:
        """A finished episode: return, length, the adapter's stats and ``env_steps``, the learner's count
        after the batch that trained its last step (``episode_ledger.py``)."""

    def on_intrinsic_returns(self, env_steps: int, returns: list[float]) -> None:
        """Intrinsic returns (before c_int) of the episodes of the batch that ends at ``env_steps``."""

    def on_metrics(self, env_steps: int, metrics: dict[str, float]) -> None:
        """A metrics row: mean rewards per step and the method's own figures."""

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        """Called after each training iteration, for progress displays."""

    def on_episodes_through(self, env_steps: int) -> None:
        """Every episode up to ``env_steps`` has been passed to ``on_episode``."""

    def on_parent(self, report: dict[str, Any]) -> None:
        """A fine-tuning run loaded its parent's weights: which tensors, which not, which reset."""


@dataclass
class TrainResult:
    status: str  # "complete" | "interrupted" | "failed"
    env_steps: int
    session_env_steps: int
    session_seconds: float
    #: why a failed run failed, when known (e.g. which child process died)
    error: str | None = None


#: how long a serial run's single process may spend in one training step before sample-factory stops it
SERIAL_HEARTBEAT_CHECK_SECONDS = 24 * 3600


def sf_argv(run: ResolvedRun, run_dir: str | Path) -> list[str]:
    """sample-factory command-line options for a resolved run trained into ``run_dir``."""
    train, budget = run.train, run.budget
    args: dict[str, Any] = {
        "env": SF_ENV_NAME,
        "experiment": "sf",
        "train_dir": str(run_dir),
        "restart_behavior": "resume",
        "device": train.device,
        "seed": run.seed,
        "serial_mode": train.serial,
        "async_rl": not train.serial,
        "num_workers": train.num_workers,
        **sampling_sf_args(train),  # per-env or batched (train.sampling)
        "batch_size": train.batch_size,  # one minibatch per update, unless sf_args split it
        "rollout": train.rollout,
        "recurrence": train.rollout,
        "use_rnn": True,
        "rnn_type": "gru",
        "rnn_size": train.rnn_size,
        "normalize_input": False,
        "learning_rate": train.learning_rate,
        "gamma": train.gamma,
        "reward_scale": train.reward_scale,
        "reward_clip": train.reward_clip,
        # sample-factory stops once its count *exceeds* this; budget - 1 stops at the first batch reaching it
        "train_for_env_steps": max(budget - 1, 1),
        "save_every_sec": train.save_every_sec,
        "save_best_every_sec": 10**9,  # "best" by raw reward means little for exploration runs
        "keep_checkpoints": 2,
        "decorrelate_envs_on_one_worker": False,
        "decorrelate_experience_max_seconds": 0,
        "with_wandb": False,  # W&B is started by llmexplore (agents/wandb_run.py), not sample-factory
    }
    if train.serial:
        # one process runs every component on one event loop: a heartbeat gap there is the length of one
        # blocking training step, not a stuck worker. sample-factory's 180 s check stopped healthy runs of
        # the published Crafter preset (320 minibatches a step took 226 s on a loaded 2-core machine).
        args["heartbeat_reporting_interval"] = SERIAL_HEARTBEAT_CHECK_SECONDS
    args.update({k: v for k, v in train.sf_args.items() if k != "with_wandb"})
    return [f"--{key}={value}" for key, value in args.items()]


def build_sf_config(run: ResolvedRun, run_dir: str | Path):
    """sample-factory's config of a resolved run trained into ``run_dir``; ``cfg.llmexplore`` carries the run,
    its folder and its training device to every process of the engine (each reads ``RunSettings.from_cfg``)."""
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args

    check_sf_args(run.train.sf_args)  # resolve checked them; a resolved.json edited since is caught here
    argv = sf_argv(run, run_dir)
    parser, _ = parse_sf_args(argv)
    try:
        cfg = parse_full_cfg(parser, argv)
    except SystemExit as exc:
        raise ConfigError(f"sample-factory rejected the options {argv}") from exc
    cfg.llmexplore = RunSettings(run=run, run_dir=str(run_dir), device=run.device).to_dict()  # read as is
    return cfg


def register_components() -> None:
    """Register our env factory and encoders with sample-factory (in every process that builds them)."""
    from sample_factory.algo.utils.context import global_model_factory
    from sample_factory.envs.env_utils import register_env

    from llmexplore.agents.encoders import make_encoder

    register_env(SF_ENV_NAME, make_sf_env)
    global_model_factory().register_encoder_factory(make_encoder)


def train(run: ResolvedRun, run_dir: str | Path, sink: TrainingSink, resume_env_steps: int = 0,
          quiet: bool = True) -> TrainResult:
    """Run (or resume) the resolved run's training into ``run_dir`` until its budget; sample-factory
    checkpoints there as it goes."""
    from llmexplore.envs.registry import get_task, require_in_new_processes

    # sample-factory probes the env in a new process even in serial mode: it must know the family
    require_in_new_processes(get_task(run.task).family)

    from sample_factory.algo.runners.runner import AlgoObserver
    from sample_factory.algo.utils.misc import EPISODIC, ExperimentStatus

    from llmexplore.agents import sf_private, stop_requests
    from llmexplore.agents.learner import REPORT_KEY, ParallelTrainer, SerialTrainer

    sf_private.check_sample_factory()  # before any work: a differing sample-factory fails here, clearly

    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
    if quiet:
        os.environ[QUIET_ENV] = "1"
        quiet_sample_factory_console()
    register_components()
    import torch

    train_config, budget = run.train, run.budget
    torch.set_num_threads(train_config.torch_threads)  # sample-factory leaves this alone in serial mode
    cfg = build_sf_config(run, run_dir)
    runner = (SerialTrainer if train_config.serial else ParallelTrainer)(cfg)
    samples_per_update = cfg.batch_size * cfg.num_batches_per_epoch  # sample-factory's batch_size: minibatch

    started = time.time()
    ledger = EpisodeLedger(sink, resume_env_steps)  # files each episode under the batch that trained it

    def learner_steps() -> int:
        return int(runner.env_steps.get(0, resume_env_steps))

    def on_episode(_runner, msg: dict, _policy_id: int) -> None:
        for row in episode_rows(msg[EPISODIC]):  # one per-env episode, or every sub-env's that just ended
            ledger.episode(row)  # written, with its batch's env steps, once the learner reports that batch

    def on_report(_runner, msg: dict, _policy_id: int) -> None:
        report = msg[REPORT_KEY]
        steps = int(report.get("env_steps", learner_steps()))  # the learner's count after the batch it reports
        if report.get("metrics"):  # before the ledger moves the logs' "complete through" mark past this batch
            sink.on_metrics(steps, report["metrics"])
        if "episodes" in report:  # one per trained batch (a stop's last metrics row has none)
            ledger.batch_trained(steps, [(int(uid), float(total)) for uid, total in report["episodes"]])
        if report.get("parent"):
            sink.on_parent(report["parent"])

    def trained_steps() -> int:
        """The learner's count after the iteration that just ended. sample-factory's runner hears of it
        only after this point (its own budget check trails by one batch); in serial mode the learner is
        here to ask, otherwise the iteration added one batch."""
        learner = sf_private.runner_learners(runner).get(0) if train_config.serial else None
        return int(learner.env_steps) if learner is not None else learner_steps() + samples_per_update

    class Progress(AlgoObserver):
        def on_training_step(self, runner_, training_iteration_since_resume: int) -> None:
            elapsed = max(time.time() - started, 1e-6)
            sink.on_progress(learner_steps(), (learner_steps() - resume_env_steps) / elapsed)
            if trained_steps() >= budget:  # stop on the batch that reaches the budget, not one later
                sf_private.stop_training(runner_)

    runner.register_observer(Progress())
    runner.register_observer(stop_requests.stop_observer())  # Ctrl-C / SIGTERM: checkpoint, then stop
    status = runner.init()
    if status != ExperimentStatus.SUCCESS:
        return TrainResult("failed", resume_env_steps, 0, time.time() - started)
    sf_private.add_policy_msg_handler(runner, EPISODIC, on_episode)
    sf_private.add_policy_msg_handler(runner, REPORT_KEY, on_report)
    with stop_requests.training_loop():
        status = runner.run()
    if status == ExperimentStatus.INTERRUPTED and train_config.serial:
        _checkpoint_interrupted_serial_run(runner, sink)
    seconds = time.time() - started
    steps = learner_steps()
    outcome = {
        ExperimentStatus.SUCCESS: "complete",
        ExperimentStatus.INTERRUPTED: "interrupted",
    }.get(status, "failed")
    if outcome == "complete" and steps < budget:
        outcome = "interrupted"
    watchdog = getattr(runner, "watchdog", None)
    error = watchdog.failure if watchdog is not None else None
    if error is not None:
        outcome = "failed"
    return TrainResult(outcome, steps, steps - resume_env_steps, seconds, error)


def _checkpoint_interrupted_serial_run(runner: Any, sink: TrainingSink) -> None:
    """Ctrl-C in one process stops sample-factory's event loop before its components' stop handlers
    run, so nothing saves the learner's state: save it here, and write the metrics row of the stretch
    since the last row at the checkpoint's step, so the record ends where the resume will start."""
    from llmexplore.agents.sf_private import runner_learners

    for learner in runner_learners(runner).values():
        if getattr(learner, "actor_critic", None) is None or learner.env_steps == 0:
            continue
        learner.save()
        final = learner.final_report()
        if final is not None:
            sink.on_metrics(int(final["env_steps"]), final["metrics"])
