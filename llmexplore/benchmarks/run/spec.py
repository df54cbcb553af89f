"""RunSpec: one (method, task, seed, budget) cell as a user writes it; ``resolve`` checks it and fills in
every default once, giving the ``ResolvedRun`` (``agents/resolved_run.py``) that the cell, the engine and the
method read."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmexplore.agents.checkpoints import (CHECKPOINT_KEY, POLICY_PARTS, latest_checkpoint,
                                           load_checkpoint_file)
from llmexplore.agents.train_config import (BATCHED, BATCHED_SETS, TrainConfig, batched_sampling_problem,
                                            check_sf_args, network_encoder, settle_reward_streams,
                                            worker_splits)
from llmexplore.agents.resolved_run import ParentSpec, ResolvedRun
from llmexplore.benchmarks.run.budget import CLI_STEPS, Steps, choose_steps
from llmexplore.envs import get_task, make_adapter
from llmexplore.errors import ConfigError, UserError, shown, validation_problems
from llmexplore.lm.check import check_lm
from llmexplore.lm.config import LMConfig
from llmexplore.methods import CheckContext, get_method, parse_options
from llmexplore.number_input import MAX_SEED


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    method: str = Field(description="exploration method name (`llmexplore methods`)")
    task: str = Field(description="task name (`llmexplore envs`)")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="run seed, 0 to 1,000,000")
    steps: Steps | None = Field(
        None, description="env-step budget, or 'published' for the task's published budget; default: the "
                          "published budget where it takes under a day here (`budget.choose_steps`)")
    ext_coef: float | None = Field(None, ge=0, description="c_ext; default: the task's published value")
    int_coef: float | None = Field(None, ge=0, description="c_int; default: the method's published value")
    method_options: dict[str, Any] = Field(
        default_factory=dict, description="the method's options (`-o key=value`; `llmexplore methods NAME` "
                                          "lists them); unset ones take the method's defaults")
    train: TrainConfig = Field(
        default_factory=TrainConfig, description="training settings (`-t key=value`; `llmexplore options` "
                                                 "lists them)")
    lm: LMConfig = Field(
        default_factory=LMConfig, description="language-model settings (`--lm key=value`); used by methods "
                                              "that ask an LM")
    parent: ParentSpec | None = Field(
        None, description="fine-tune from another run's checkpoint (`--parent`); none: train from scratch")
    label: str | None = Field(None, description="row name in tables (default: the method name)")

    @classmethod
    def parse(cls, data: dict[str, Any], source: str = "run spec") -> "RunSpec":
        """A run spec from plain data; every invalid field named in one ConfigError about ``source``."""
        try:
            return cls(**data)
        except ValidationError as exc:
            problems = validation_problems(exc)
            raise ConfigError(f"invalid {source}: " + "; ".join(f"{f}: {m}" for f, m in problems),
                              problems=problems) from None


def cell_id(spec: "RunSpec | ResolvedRun") -> str:
    """How grids, run records and progress lines name a run: ``label/task/seed<N>``."""
    return f"{spec.label or spec.method}/{spec.task}/seed{spec.seed}"


def resolve(spec: RunSpec, check_parent: bool = True, check_device: bool = True,
            steps_spelling: str = CLI_STEPS) -> ResolvedRun:
    """Check every name and value of a spec and fill in every default; raise one ConfigError listing all
    problems.

    The budget rule runs here, once: no ``steps`` is the task's published budget only where that takes
    under a day here (``budget.choose_steps``; ``steps_spelling`` names the setting in its message:
    ``--steps`` or a grid file's ``steps:``).

    ``check_parent=False`` leaves the parent checkpoint unchosen (its reset parts are still checked),
    for grids whose parent cell has not run yet: the grid chooses it with ``with_parent_checkpoint``
    when the parent has finished. ``check_device=False`` skips what depends on where the cell runs
    (CUDA, the LM server or weights) and leaves open what the machine settles (the torch threads when not
    set, an ``auto`` device), for grids submitted from another machine: the cell settles and checks them
    where it runs (``settle_here``); the grid runner checks each LM server once as well.
    """
    problems: list[tuple[str, str]] = []

    def attempt(field: str, fn):
        try:
            return fn()
        except UserError as exc:  # ConfigError, DataError, MissingExtraError
            problems.append((field, str(exc)))
            return None

    task = attempt("task", lambda: get_task(spec.task))
    method = attempt("method", lambda: get_method(spec.method))
    options = attempt("method_options", lambda: parse_options(method, spec.method_options)) if method else None
    adapter = attempt("task", lambda: make_adapter(task)) if task else None
    if adapter is not None:
        attempt("task", adapter.validate_data)
    if adapter is not None and method is not None and options is not None:
        check = CheckContext(task, adapter.observation_space(), options, spec.lm)
        attempt("method", lambda: method.check_run(check))
    # a preset the family does not offer is reported with the rest; the checks below then see no preset
    family = task.family if task else "generic"
    train = (attempt("train", lambda: spec.train.resolved(family, here=check_device))
             or spec.train.model_copy(update={"preset": None}).resolved(family, here=check_device))
    if adapter is not None:
        attempt("train", lambda: network_encoder(task.family, train.network))
    attempt("train", lambda: check_sf_args(train.sf_args))  # the engine's own check, before anything runs
    # without a task, a budget given as a number is still checked against the batch
    budget = (attempt("steps", lambda: choose_steps(spec.steps, task, train.num_workers, steps_spelling))
              if task is not None else spec.steps if isinstance(spec.steps, int) else None)
    problems.extend(_check_training(train, budget))
    if check_device and method is not None and options is not None:
        problems.extend(_machine_problems(train, spec.lm, method.uses_lm))
    int_coef = spec.int_coef if spec.int_coef is not None else method.int_coef_for(options) if options else None
    train = attempt("train", lambda: _with_reward_streams(spec, train, method, int_coef)) or train
    parent = spec.parent
    if parent is not None:  # without check_parent only its reset parts (_check_reset_parts returns None)
        checkpoint = attempt("parent", lambda: (_check_parent if check_parent else _check_reset_parts)(parent))
        parent = parent.model_copy(update={"checkpoint": checkpoint}) if checkpoint else parent
    _refuse(problems)
    return ResolvedRun(
        method=method.name, task=task.name, seed=spec.seed, steps=budget,
        ext_coef=spec.ext_coef if spec.ext_coef is not None else task.default_ext_coef,
        int_coef=int_coef,
        method_options=options.model_dump(), train=train, lm=spec.lm, parent=parent, label=spec.label or spec.method,
        encoder=network_encoder(task.family, train.network), policy_keys=tuple(method.policy_keys))


def _refuse(problems: list[tuple[str, str]]) -> None:
    """One ConfigError naming every problem (a single one reads as itself), or nothing without problems."""
    if problems:
        raise ConfigError(problems[0][1] if len(problems) == 1 else "\n".join(f"- {msg}" for _, msg in problems),
                          problems=problems)


def settle_here(run: ResolvedRun) -> ResolvedRun:
    """The run with what ``resolve(check_device=False)`` leaves to the machine that trains: the torch threads
    and an ``auto`` device settled here (``TrainConfig.settled_here``), then checked: a visible GPU when the
    run trains on one, its LM server or weights. A cell does this before it trains a run resolved elsewhere
    (a grid's ``resolved.json``: a SLURM or Ray node may differ from the submitting host, and each local
    cell gets its own share of threads)."""
    from llmexplore.methods import get_method

    train = run.train.settled_here()
    _refuse(_machine_problems(train, run.lm, get_method(run.method).uses_lm))
    return run if train == run.train else run.model_copy(update={"train": train})


def with_parent_checkpoint(run: ResolvedRun) -> ResolvedRun:
    """A fine-tuning run with its parent's checkpoint chosen now (the parent's latest unless one is named).

    A grid resolves a fine-tuning cell before its parent has trained (``resolve(check_parent=False)``) and
    calls this when the parent has finished, just before it writes the cell's ``resolved.json``."""
    if run.parent is None:
        return run
    try:
        checkpoint = _check_parent(run.parent)
    except UserError as exc:
        raise ConfigError(str(exc), problems=[("parent", str(exc))]) from None
    return run.model_copy(update={"parent": run.parent.model_copy(update={"checkpoint": checkpoint})})


def _with_reward_streams(spec: RunSpec, train: TrainConfig, method: Any, int_coef: float | None) -> TrainConfig:
    """The resolved training settings with the run's reward streams: its own, else the method's published
    choice (``train_config.settle_reward_streams``); as they are while the method or c_int is in error."""
    if method is None or int_coef is None:
        return train
    return settle_reward_streams(spec.train, train, method.name, method.reward_streams, int_coef)


def _machine_problems(train: TrainConfig, lm: LMConfig, uses_lm: bool) -> list[tuple[str, str]]:
    """Problems of the machine the run trains on: a GPU it cannot see, an LM it cannot reach."""
    problems: list[tuple[str, str]] = []
    if train.device == "gpu":
        import torch

        if not torch.cuda.is_available():
            problems.append(("train", "train.device is 'gpu' but no CUDA device is visible; use 'cpu' or 'auto'"))
    if train.compile != "off" and train.device == "cpu" and compiler_missing():
        problems.append(("train", "train.compile='learner' on a CPU needs a C++ compiler for torch.compile and none "
                                  "was found (g++, c++ or clang++ on PATH, or CXX); install one or use compile=off"))
    if train.compile != "off" and train.device == "gpu" and importlib.util.find_spec("triton") is None:
        problems.append(("train", "train.compile='learner' on a GPU needs triton for torch.compile and it is not "
                                  "installed; pip install triton (the version your torch names) or use compile=off"))
    if uses_lm:
        try:
            check_lm(lm)
        except UserError as exc:
            problems.append(("lm", str(exc)))
    return problems


def compiler_missing() -> bool:
    """Whether torch.compile's CPU backend would find no C++ compiler (it looks at CXX, then these names)."""
    import shutil

    return not any(shutil.which(name) for name in (os.environ.get("CXX", ""), "g++", "c++", "clang++") if name)


def _check_training(train: TrainConfig, budget: int | None) -> list[tuple[str, str]]:
    """Problems of the training settings with this budget (None: not known, as the task or steps were not)."""
    problems: list[tuple[str, str]] = []
    per_rollout = train.num_workers * train.envs_per_worker * train.rollout
    if budget is not None and budget < train.batch_size:
        problems.append(("steps",
            f"budget of {budget} env steps is smaller than one training batch ({train.batch_size}); "
            f"raise the budget or lower train.batch_size"
        ))
    if train.serial and train.batch_size % per_rollout != 0:
        problems.append(("train",
            f"train.batch_size {train.batch_size} must be a multiple of workers x envs_per_worker x rollout "
            f"= {train.num_workers} x {train.envs_per_worker} x {train.rollout} = {per_rollout}"
        ))
    if train.batch_size % train.rollout != 0:
        problems.append(("train", f"train.batch_size {train.batch_size} must be a multiple of train.rollout {train.rollout}"))
    minibatch = train.sf_args.get("batch_size", train.batch_size)
    minibatches = train.sf_args.get("num_batches_per_epoch", 1)
    split = isinstance(minibatch, int) and isinstance(minibatches, int)
    if split and minibatch * minibatches != train.batch_size:
        # sample-factory's batch_size is its minibatch; an update takes num_batches_per_epoch of them
        problems.append(("train",
            f"train.sf_args.batch_size (the minibatch) x sf_args.num_batches_per_epoch = {minibatch} x "
            f"{minibatches} = {minibatch * minibatches} must equal train.batch_size {train.batch_size} "
            f"(env steps per update); set them so they match"
        ))
    problems.extend(_check_sample_factory_rules(train))
    return problems


def _check_sample_factory_rules(train: TrainConfig) -> list[tuple[str, str]]:
    """Combinations sample-factory 2.1.1 asserts on inside its processes (a traceback after start),
    named here with the rule and a fix, before anything starts."""
    problems: list[tuple[str, str]] = []
    sf = train.sf_args
    splits = worker_splits(train.envs_per_worker, sf, train.sampling)
    if isinstance(splits, int) and splits > 0 and train.envs_per_worker % splits != 0:
        problems.append(("train", f"train.envs_per_worker {train.envs_per_worker} must be a multiple of "
                                  f"sf_args.worker_num_splits {splits} (double-buffered sampling splits each "
                                  f"worker's envs in equal halves)"))
    if sf.get("with_vtrace") and sf.get("normalize_returns", True):
        problems.append(("train", "sf_args.with_vtrace needs sf_args.normalize_returns=false: sample-factory "
                                  "normalises returns only without V-trace"))
    if train.sampling == BATCHED and any(key in sf for key in BATCHED_SETS):
        problems.append(("train", "train.sampling=batched sets sample-factory's batched_sampling and "
                                  "num_envs_per_worker itself; leave them out of sf_args (train.envs_per_worker "
                                  "sets the envs each worker steps)"))
    if sf.get("batched_sampling") or train.sampling == BATCHED:
        problem = batched_sampling_problem(train.envs_per_worker, train.batch_size, train.rollout, sf)
        if problem:
            problems.append(("train", problem))
    return problems


def _check_reset_parts(parent: ParentSpec) -> None:
    bad = sorted(set(parent.reset) - set(POLICY_PARTS))
    if bad:
        raise ConfigError(f"parent.reset names unknown parts {shown(bad)}",
                          hint=f"valid parts: {sorted(POLICY_PARTS)}")


def _check_parent(parent: ParentSpec) -> str:
    _check_reset_parts(parent)
    if parent.checkpoint:
        path = Path(parent.checkpoint)
        if not path.is_file():
            raise ConfigError(f"parent checkpoint {path} does not exist")
    else:
        found = latest_checkpoint(parent.run_dir)
        if found is None:
            raise ConfigError(
                f"parent run {parent.run_dir} has no checkpoint",
                hint="train the parent first, or name a checkpoint file with parent.checkpoint",
            )
        path = found
    data = load_checkpoint_file(path)
    if "model" not in data:
        raise ConfigError(f"{path} is not a sample-factory checkpoint (no 'model' entry)")
    if CHECKPOINT_KEY not in data:
        raise ConfigError(f"{path} was not written by llmexplore (no '{CHECKPOINT_KEY}' entry)")
    return str(path)
