"""Train one agent with sample-factory APPO and our learner.

This module knows sample-factory; it knows nothing of run records. Callers pass sinks
for episodes, intrinsic returns and progress, and get a short result back.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.train_config import check_sf_args
from llmexplore.agents.training_result import TrainingSink, TrainResult
from llmexplore.agents.training_budget import TrainingBudget
from llmexplore.agents.sf_env import QUIET_ENV, SF_ENV_NAME, make_sf_env, quiet_sample_factory_console
from llmexplore.agents.vector_env import sampling_sf_args
from llmexplore.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover (it imports sample-factory)
    from llmexplore.agents.training_watch import TrainingWatch


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
        "train_for_env_steps": TrainingBudget(budget).sample_factory_limit,  # a backstop: the budget stops first
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
    from llmexplore.agents.reward_streams import make_actor_critic

    register_env(SF_ENV_NAME, make_sf_env)
    global_model_factory().register_encoder_factory(make_encoder)
    global_model_factory().register_actor_critic_factory(make_actor_critic)  # a value head per reward stream


def train(run: ResolvedRun, run_dir: str | Path, sink: TrainingSink, resume_env_steps: int = 0,
          quiet: bool = True) -> TrainResult:
    """Run (or resume) the resolved run's training into ``run_dir`` until its budget; sample-factory
    checkpoints there as it goes. Serial and parallel runs go through the same steps."""
    prepare_process(run, quiet)
    runner = build_runner(run, run_dir)
    watch = watch_runner(runner, run, sink, resume_env_steps)
    status = start_engine(runner, watch)
    if status is not None:
        status = run_engine(runner)
        stop_engine(runner, status, sink, run.train.serial)
    return watch.result(status)


def prepare_process(run: ResolvedRun, quiet: bool) -> None:
    """This process, before any engine: the task's family known to new processes, sample-factory checked
    against the pieces we rely on, its console quiet when asked, our env and encoders registered."""
    from llmexplore.envs.registry import get_task, require_in_new_processes

    # sample-factory probes the env in a new process even in serial mode: it must know the family
    require_in_new_processes(get_task(run.task).family)
    from llmexplore.agents import sf_private

    sf_private.check_sample_factory()  # before any work: a differing sample-factory fails here, clearly
    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
    if quiet:
        os.environ[QUIET_ENV] = "1"
        quiet_sample_factory_console()
    register_components()
    import torch

    torch.set_num_threads(run.train.torch_threads)  # sample-factory leaves this alone in serial mode


def build_runner(run: ResolvedRun, run_dir: str | Path) -> Any:
    """sample-factory's runner for the run: every component in this process (serial) or in workers."""
    from llmexplore.agents.learner import ParallelTrainer, SerialTrainer

    return (SerialTrainer if run.train.serial else ParallelTrainer)(build_sf_config(run, run_dir))


def watch_runner(runner: Any, run: ResolvedRun, sink: TrainingSink, resume_env_steps: int) -> TrainingWatch:
    """The main process's watch over the runner (budget, progress, reports: ``training_watch.py``), and
    the stop on Ctrl-C or SIGTERM (checkpoint first), registered as sample-factory observers."""
    from llmexplore.agents import stop_requests
    from llmexplore.agents.training_watch import TrainingWatch

    watch = TrainingWatch(runner, TrainingBudget(run.budget), sink, resume_env_steps, run.train.serial)
    runner.register_observer(watch)
    runner.register_observer(stop_requests.stop_observer())
    return watch


def start_engine(runner: Any, watch: TrainingWatch) -> Any:
    """Start sample-factory's components; None when they failed to start, else its status so far. The
    watch hears episodes and reports from then on."""
    from sample_factory.algo.utils.misc import ExperimentStatus

    status = runner.init()
    if status != ExperimentStatus.SUCCESS:
        return None
    watch.listen()
    return status


def run_engine(runner: Any) -> Any:
    """Train until the budget, a stop request or a failure; sample-factory's final status."""
    from llmexplore.agents import stop_requests

    with stop_requests.training_loop():
        return runner.run()


def stop_engine(runner: Any, status: Any, sink: TrainingSink, serial: bool) -> None:
    """What a stop leaves undone: an interrupted serial run's checkpoint and last metrics row."""
    from sample_factory.algo.utils.misc import ExperimentStatus

    if status == ExperimentStatus.INTERRUPTED and serial:
        _checkpoint_interrupted_serial_run(runner, sink)


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
