"""Training hyperparameters: typed, validated, with defaults per environment family."""

from __future__ import annotations

import difflib
import functools
import math
import os
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

#: Defaults chosen for this suite's reference machine (2 CPU cores): serial sampling, a 256-unit
#: GRU; each environment family overrides them with its own (``EnvFamily.train_defaults``, e.g.
#: the reward scaling of its published protocol).
GENERIC_DEFAULTS: dict[str, Any] = dict(envs_per_worker=16, batch_size=1024, gamma=0.99, reward_scale=1.0,
                                        sampling="per-env")
#: ``train.sampling`` values: sample-factory steps each env on its own (per-env), or each rollout worker
#: steps its envs as one vector env per split and moves whole batches (batched; agents/vector_env.py)
PER_ENV, BATCHED = "per-env", "batched"


def family_defaults(family: str) -> dict[str, Any]:
    """The training defaults of an environment family (the generic ones for a family not registered)."""
    from llmexplore.envs.registry import find_family

    found = find_family(family)
    return {**GENERIC_DEFAULTS, **(found.train_defaults if found else {})}


def family_presets(family: str) -> Mapping[str, Mapping[str, Any]]:
    """The ``-t preset=<name>`` choices of an environment family (none for a family not registered)."""
    from llmexplore.envs.registry import find_family

    found = find_family(family)
    return found.presets if found else {}


def preset_settings(family: str, preset: str) -> Mapping[str, Any]:
    """The settings a family's preset fills in; a clear error for a name the family does not offer."""
    choices = family_presets(family)
    if preset not in choices:
        from llmexplore.errors import ConfigError, shown

        offered = f"offer preset={' or preset='.join(choices)}" if choices else "offer no preset"
        raise ConfigError(f"train.preset {shown(preset)} is not available for {family} tasks",
                          hint=f"{family} tasks {offered}")
    return choices[preset]


def worker_splits(envs_per_worker: int, sf_args: Mapping[str, Any], sampling: str | None = PER_ENV) -> Any:
    """How many parts sample-factory splits each worker's envs into (double buffering): sf_args'
    ``worker_num_splits`` when set (checked by the caller); else, per-env, 2 for an even number of envs
    (else 1), and batched, 1: one vector env of all the worker's envs (measured on 2 cores, NetHack, 32 envs:
    392 against 466 CPU microseconds per env step with two vector envs of 16, the sampler's fixed cost per
    vector step spread over twice the envs)."""
    if "worker_num_splits" in sf_args:
        return sf_args["worker_num_splits"]
    return 1 if sampling == BATCHED else 2 if envs_per_worker % 2 == 0 else 1


def batched_sampling_problem(envs_per_worker: int, batch_size: int, rollout: int,
                             sf_args: Mapping[str, Any]) -> str | None:
    """Why sample-factory 2.1.1 would refuse batched sampling with these settings (it asserts inside a worker,
    after start), naming a fix; None when they fit. A split's trajectories (envs_per_worker / splits) and an
    update's (batch_size / rollout) must divide one another."""
    splits = worker_splits(envs_per_worker, sf_args, BATCHED)
    if not isinstance(splits, int) or splits <= 0 or envs_per_worker % splits:
        return None  # the split rule itself is refused on its own
    per_split, per_update = envs_per_worker // splits, batch_size // rollout
    if not per_split or not per_update or math.gcd(per_split, per_update) == min(per_split, per_update):
        return None
    fits = [d for d in range(1, per_update + 1) if per_update % d == 0 and d <= per_split]
    return (f"with batched sampling, a worker's trajectories per split (envs_per_worker / splits = "
            f"{envs_per_worker} / {splits} = {per_split}) and an update's trajectories (batch_size / rollout = "
            f"{batch_size} / {rollout} = {per_update}) must divide one another; e.g. "
            f"-t envs_per_worker={max(fits) * splits}, or -t sampling=per-env")


#: sample-factory options the batched path sets itself (``agents/vector_env.py: sampling_sf_args``)
BATCHED_SETS = ("batched_sampling", "num_envs_per_worker")


def network_encoder(family: str, network: str) -> str:
    """The encoder name (run settings, checkpoints) of a family's ``-t network`` choice."""
    from llmexplore.envs.registry import get_family

    choices = get_family(family).networks
    if network not in choices:
        from llmexplore.errors import ConfigError, shown

        raise ConfigError(f"train.network {shown(network)} is not available for {family} tasks",
                          hint=f"{family} tasks offer network={' or network='.join(choices)}")
    return choices[network].name


def check_sf_args(sf_args: Mapping[str, Any]) -> None:
    """Refuse ``train.sf_args`` keys sample-factory does not take, with close names: the one check that
    ``spec.resolve`` (``llmexplore run -t``, every grid cell, ``grid --dry-run``) and the engine share."""
    if not sf_args:
        return  # most runs: sample-factory's parser is not even built
    known = _sf_option_names()
    unknown = sorted(str(key) for key in sf_args if key not in known)
    if not unknown:
        return
    from llmexplore.errors import ConfigError, shown

    close = sorted({match for key in unknown for match in difflib.get_close_matches(key, known, n=2, cutoff=0.75)})
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise ConfigError(f"unknown sample-factory option{'s' if len(unknown) > 1 else ''} in train.sf_args: "
                      f"{', '.join(shown(key) for key in unknown[:10])}{' ...' if len(unknown) > 10 else ''}",
                      hint=f"{hint}`python -m sample_factory.train --help` lists them (written with _, not -)")


@functools.cache
def _sf_option_names() -> frozenset[str]:
    """sample-factory's option names (its parser takes seconds to build, so once per process)."""
    from sample_factory.cfg.arguments import parse_sf_args

    from llmexplore.agents.sf_private import option_names

    parser, _ = parse_sf_args(["--env=any"])  # (the option names do not depend on the env)
    return frozenset(option_names(parser))


class TrainConfig(BaseModel):
    """How one cell is trained. ``None`` means: the environment family's default."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    num_workers: int = Field(1, ge=1, description="rollout worker processes (1: everything in one process)")
    envs_per_worker: int | None = Field(
        None, ge=2, description="environments each rollout worker steps side by side (>= 2); default: the "
                                "family's")
    batch_size: int | None = Field(
        None, ge=64, description="env steps per PPO update (>= 64); default: the family's")
    rollout: int = Field(
        32, ge=2, description="steps per trajectory before it goes to the learner; also the GRU's "
                              "backpropagation length")
    learning_rate: float = Field(
        1e-4, gt=0, description="Adam learning rate of the policy and value networks (> 0)")
    gamma: float | None = Field(
        None, gt=0, le=1, description="discount factor, in (0, 1]; default: the family's")
    reward_scale: float | None = Field(
        None, gt=0, description="factor on the env's reward before clipping (> 0); default: the family's")
    reward_clip: float = Field(10.0, gt=0, description="the scaled env reward is clipped to +-this (> 0)")
    rnn_size: int = Field(256, ge=8, description="units of the policy's GRU core (>= 8)")
    network: Literal["small", "light", "published"] = Field(
        "small", description="policy network: small (ours, sized for a CPU) or another the task's family "
                             "offers (EnvFamily.networks; `llmexplore options --task T` lists them)")
    preset: str | None = Field(
        None, description="a family's named training setup (EnvFamily.presets), filled in where the run "
                          "leaves settings unset (`llmexplore options --task T` lists the family's presets)")
    device: Literal["cpu", "gpu", "auto"] = Field(
        "cpu", description="where the learner trains: cpu, gpu, or auto (gpu when CUDA is available)")
    sampling: Literal["per-env", "batched"] | None = Field(
        None, description="how rollout workers step their envs: per-env (sample-factory steps and books each "
                          "env on its own) or batched (each worker steps its envs together as one vector env "
                          "and moves whole batches: less overhead per step, each env seeded as on the per-env "
                          "path); default: the "
                          "family's faster one, as measured, where the settings allow it (batched: a split's envs "
                          "and an update's trajectories divide one another), else per-env; a run made before this "
                          "option ran per-env")
    serial: bool | None = Field(None, description="sample in the learner's process; default: when num_workers is 1")
    compile: Literal["off", "learner"] = Field(
        "off", description="learner: torch.compile the policy's encoder where it trains (the learner's forward and "
                           "backward passes; acting stays eager, which measured faster at its small batches): the "
                           "same function to float noise, no faster end to end on a 2-core CPU as measured "
                           "(docs/GPU.md), a one-time compile of 10-60 s in the learner's process; needs a C++ "
                           "compiler on a CPU, triton on a GPU. off: eager everywhere (a run made before this option)")
    torch_threads: int | None = Field(
        None, ge=1, description="intra-op threads for the serial process; default OMP_NUM_THREADS, else 1")
    update_thread: bool = Field(
        True, description="train the method's own networks in a second thread while PPO updates the policy "
                          "on the same batch, for methods that allow it (the same results; faster where a "
                          "core is free)")
    reward_streams: Literal[1, 2] | None = Field(
        None, description="1: the method's bonus is added to the env reward and one value head learns their sum, "
                       "episodically, with gamma; 2: a value head per stream (RND's split): the env reward's "
                       "return episodic, the bonus's with intrinsic_gamma (non-episodic unless "
                       "intrinsic_episodic) and divided by the running std of its return, advantages "
                       "combined as c_ext * A_ext + c_int * A_int. Default: the method's published choice "
                       "(RND 2, the others 1; 1 where c_int is 0; docs/METHODS.md); a run resolved before this option "
                       "existed trained 1")
    intrinsic_gamma: float = Field(
        0.99, gt=0, le=1, description="with reward_streams=2: discount of the intrinsic return, in (0, 1] "
                                      "(RND: 0.99); below 1 unless intrinsic_episodic")
    intrinsic_episodic: bool = Field(
        False, description="with reward_streams=2: end the intrinsic return at episode ends (RND: false, the "
                           "bonus's return runs on across episodes)")
    save_every_sec: int = Field(60, ge=1, description="seconds between periodic checkpoints (a safety net)")
    metrics_every_steps: int | None = Field(
        None, ge=1, description="env steps between rows of metrics.jsonl; default: budget / 100 (plus a final row)")
    wandb: bool = Field(False, description="log every TensorBoard scalar to Weights & Biases at env steps "
                                           "(project llmexplore, "
                                           "group: the task); WANDB_MODE=offline writes <run>/wandb/offline-run-*")
    sf_args: dict[str, Any] = Field(default_factory=dict, description="raw sample-factory options, for experts")

    def resolved(self, family: str, here: bool = True) -> "TrainConfig":
        """A copy with the preset's settings and every family default filled in; with ``here``, also what
        depends on this machine (``settled_here``).

        Raises ``ConfigError`` for a preset the family does not offer.
        """
        defaults = family_defaults(family)
        values = self.model_dump()
        preset = preset_settings(family, self.preset) if self.preset is not None else {}
        for key, value in preset.items():
            if key == "sf_args":  # merged: the run's own sample-factory options win
                values[key] = {**value, **self.sf_args}
            elif key not in self.model_fields_set:
                values[key] = value
        for key, value in defaults.items():
            if values.get(key) is None:
                values[key] = value
        if self.sampling is None and "sampling" not in preset and values["sampling"] == BATCHED and (
                batched_sampling_problem(values["envs_per_worker"], values["batch_size"], values["rollout"],
                                         values["sf_args"]) or any(key in values["sf_args"] for key in BATCHED_SETS)):
            values["sampling"] = PER_ENV  # the family's batched default does not fit these settings: per-env
        if values["serial"] is None:
            values["serial"] = values["num_workers"] == 1
        config = TrainConfig(**values)
        return config.settled_here() if here else config

    def settled_here(self) -> "TrainConfig":
        """What depends on the machine (and process) that trains, filled in: the torch threads when not set
        (OMP_NUM_THREADS, which grid backends set per cell, else 1) and an ``auto`` device. A grid leaves
        them open for its cells, which settle them where they run."""
        values = self.model_dump()
        if values["torch_threads"] is None:
            # small per-step batches gain little from threads, and threads oversubscribe a busy machine
            # (measured on 2 cores with one other process: 1 thread ran NetHack training 4-5x faster)
            values["torch_threads"] = int(os.environ.get("OMP_NUM_THREADS", "1") or 1)
        if values["device"] == "auto":
            import torch

            values["device"] = "gpu" if torch.cuda.is_available() else "cpu"
        return TrainConfig(**values)


#: the training options that only two reward streams read
INTRINSIC_STREAM_OPTIONS = ("intrinsic_gamma", "intrinsic_episodic")


def settle_reward_streams(given: TrainConfig, resolved: TrainConfig, method: str, method_streams: int,
                          int_coef: float) -> TrainConfig:
    """``resolved`` with its reward streams chosen: the run's own ``reward_streams`` when ``given`` (the spec's
    training options) sets one, else the method's published choice (``IntrinsicReward.reward_streams``).

    A run whose c_int is 0 defaults to one stream. Why here: the choice needs the method and c_int, which the
    family defaults of ``TrainConfig.resolved`` do not know.
    Raises ``ConfigError`` where the choice cannot apply, naming the fix.
    """
    from llmexplore.errors import ConfigError

    chosen = given.reward_streams is not None
    # a bonus weighed 0 (e.g. fine-tuning on the task reward alone) has no return for a second head to learn
    streams = given.reward_streams if chosen else 1 if int_coef == 0 else method_streams
    source = "train.reward_streams=2" if chosen else f"{method}'s default of two reward streams"
    if streams == 1:
        # set to another value than the default (a resolved run's settings given back, e.g. a fine-tuning
        # child's, name every field)
        stray = [name for name in INTRINSIC_STREAM_OPTIONS
                 if getattr(given, name) != TrainConfig.model_fields[name].default]
        if stray:
            raise ConfigError(f"train.{stray[0]} applies to two reward streams, and this run has one",
                              hint=f"add -t reward_streams=2, or drop train.{stray[0]}")
    elif int_coef == 0:
        raise ConfigError(f"{source} needs an intrinsic reward, and this run's c_int is 0 "
                          f"({'the method has no bonus' if method == 'none' else 'no bonus reaches PPO'})",
                          hint="leave reward_streams unset, or use a method with a bonus and c_int > 0")
    elif resolved.sf_args.get("with_vtrace"):
        raise ConfigError(f"{source} computes both returns with GAE; train.sf_args.with_vtrace asks for V-trace",
                          hint="drop sf_args.with_vtrace, or use -t reward_streams=1")
    elif str(resolved.sf_args.get("actor_critic_share_weights", True)).lower() == "false":
        raise ConfigError(f"{source} adds its value head to the shared actor-critic; "
                          "sf_args.actor_critic_share_weights=false builds separate ones",
                          hint="drop sf_args.actor_critic_share_weights, or use -t reward_streams=1")
    elif given.intrinsic_gamma == 1 and not given.intrinsic_episodic:
        raise ConfigError("train.intrinsic_gamma=1 with a non-episodic intrinsic return sums the bonus without "
                          "end", hint="use intrinsic_gamma below 1 (RND: 0.99), or intrinsic_episodic=true")
    return resolved.model_copy(update={"reward_streams": streams})
