"""The intrinsic-reward interface every exploration method implements.

A method has two sides. The *actor side* (``wrap_env``) runs inside rollout workers and
may add observation keys: episodic message counts, goal suggestions, the active skill.
The *learner side* (``reward``, ``update``) runs on whole training batches in the learner
and must be batched. State that must survive a restart goes through ``state_dict``.

The learner-side contract, which every method keeps:

* The learner calls ``reward(batch)`` and then ``update(batch)`` with the same batch object, once each,
  batch after batch.
* ``reward`` trains nothing. Whether it may change the method's state is declared by
  ``reward_changes_state``: False (the default), it is a function of the state and the batch, so a
  second call gives the same values and evaluation can score a checkpoint's episodes with it; True, it
  advances state that follows the batch's steps in time and decides later rewards (E3B's per-episode
  ellipses, NovelD's visited sets, running reward statistics). Counters kept for ``metrics`` are not
  state in this sense.
* Work ``reward`` did that ``update`` needs too (an embedding pass with its graph, the batch's
  captions) is handed over with ``carry(batch, work)`` and taken in ``update`` with ``carried(batch)``,
  which returns it only for that very batch, once. Where ``reward`` did not see the batch (a caller
  that trains without rewarding) ``carried`` returns None and ``update`` computes what it needs itself,
  never by calling ``reward``, whose state changes and counters belong to rewarding.

Timing convention: ``batch.obs`` holds T+1 observations per trajectory row; the reward
of transition t (action a_t) belongs to what the action led to, ``batch.next_obs``
(index t+1). When transition t ended an episode (``batch.dones[:, t] == 1``) the next
observation is already the first of a new episode, so methods that read per-episode
state from it (counts, captions) should mask those steps.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict

from llmexplore.envs.base import TaskSpec

from llmexplore.lm.config import LMConfig

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch

# torch is imported where a method works, never at import: the registry, `llmexplore methods` and
# `grid --dry-run` read methods' names, options and checks without loading it.
_F = TypeVar("_F", bound=Callable[..., Any])


def no_grad(fn: _F) -> _F:
    """``torch.no_grad()`` as a decorator that imports torch on the first call, not at import."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.no_grad():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class MethodOptions(BaseModel):
    """Options of a method; subclasses add typed fields. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class MethodContext:
    """What a method may know about the run it is part of; picklable for worker processes."""

    task: TaskSpec
    seed: int
    #: the run folder: caches and the method's own files go here
    run_dir: Path
    #: this process's torch device
    device: str = "cpu"
    #: the language model the run talks to (the run's ``lm`` settings, every default filled in)
    lm: LMConfig = field(default_factory=LMConfig)
    #: the task's number of discrete actions where the caller knows it (the learner does); None: a
    #: method that needs it builds one env to read it (``inverse_dynamics.action_count``)
    num_actions: int | None = None
    #: the resolved run the method is part of (``agents/resolved_run.py: ResolvedRun``: coefficients, budget,
    #: training settings); None where a method is built outside a run (a unit test, a tool that scores a
    #: policy alone). Typed loosely: the engine's modules stay out of the methods' imports
    run: Any = None


@dataclass(frozen=True)
class CheckContext:
    """What ``IntrinsicReward.check_run`` sees of a run before any work starts: the run is being
    resolved, so there is no resolved run yet; the options and LM settings are already typed."""

    task: TaskSpec
    obs_space: gym.spaces.Dict
    options: MethodOptions
    lm: LMConfig


@dataclass
class RewardBatch:
    """One learner batch as a method sees it.

    obs: raw observation tensors, shape [N, T+1, ...] (not normalised)
    actions: [N, T]; dones: [N, T] float (1 where the transition ended the episode)
    """

    obs: Mapping[str, torch.Tensor]
    actions: torch.Tensor
    dones: torch.Tensor

    @property
    def next_obs(self) -> dict[str, torch.Tensor]:
        """The observations after each transition: [N, T, ...]."""
        return {k: v[:, 1:] for k, v in self.obs.items()}

    @property
    def current_obs(self) -> dict[str, torch.Tensor]:
        """The observations before each transition: [N, T, ...]."""
        return {k: v[:, :-1] for k, v in self.obs.items()}

    @property
    def shape(self) -> tuple[int, int]:
        """(N, T): trajectories and steps per trajectory."""
        return tuple(self.actions.shape[:2])  # type: ignore[return-value]


@dataclass(frozen=True)
class MethodPreset:
    """A named set of a method's published settings (``-o preset=NAME``): options given explicitly win."""

    #: option values the preset sets
    options: Mapping[str, Any]
    #: c_int the preset implies when the run sets none (None: the method's default)
    int_coef: float | None
    #: where the settings come from, and what of them no option reproduces
    source: str


class IntrinsicReward(ABC):
    """Base class of exploration methods. Register subclasses with ``@register_method``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: the method's name in papers' tables (LaTeX leaderboards); empty: ``name``
    display_name: ClassVar[str] = ""
    #: observation keys the environment adapter must provide
    required_keys: ClassVar[tuple[str, ...]] = ()
    #: extra observation keys (added by ``wrap_env``) the policy network should condition on
    policy_keys: ClassVar[tuple[str, ...]] = ()
    #: c_int of docs/METHODS.md's reward combination when a run does not set one
    default_int_coef: ClassVar[float] = 0.0
    #: value heads of the run when it sets no ``train.reward_streams``: the published code's (1: one critic
    #: on c_ext * r_env + c_int * r_int; 2: RND's extrinsic and intrinsic heads; docs/METHODS.md)
    reward_streams: ClassVar[int] = 1
    #: does the method talk to a language model (runs check the LM backend first)
    uses_lm: ClassVar[bool] = False
    #: may ``update`` run in a second thread while PPO trains on the same batch (``train.update_thread``)?
    #: Only when it reads the batch without writing it, touches nothing of the policy's, and draws no
    #: numbers from numpy's global generator (PPO shuffles its minibatches with it): then the results are
    #: those of the sequential order, and a free core takes the method's training off the wall time.
    update_beside_policy: ClassVar[bool] = False
    Options: ClassVar[type[MethodOptions]] = MethodOptions
    #: named sets of published settings, chosen with the option ``preset`` (which the Options then declare)
    presets: ClassVar[Mapping[str, MethodPreset]] = {}
    #: may ``reward`` change state that decides later rewards (the module's contract)? False: no
    reward_changes_state: ClassVar[bool] = False

    @classmethod
    def int_coef_for(cls, options: MethodOptions) -> float:
        """c_int of a run that sets none: its preset's, else the method's default."""
        preset = cls.presets.get(getattr(options, "preset", None) or "")
        return preset.int_coef if preset is not None and preset.int_coef is not None else cls.default_int_coef

    def __init__(self, options: MethodOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        self.options = options
        self.context = context
        self.obs_space = obs_space
        #: what ``reward`` handed to ``update``: (the batch, the work), until ``carried`` takes it
        self._carried: tuple[RewardBatch, Any] | None = None
        import torch

        self.device = torch.device(context.device)

    # -- checks before any work ------------------------------------------------------------
    @classmethod
    def needed_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        """Observation keys this configuration reads (default: ``required_keys``)."""
        return cls.required_keys

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Raise a UserError (usually ConfigError) when the method cannot run as configured.

        The one check a method has, called before any work with everything known about the run:
        the task and its observation space, the method's options and the LM settings. The
        default refuses a task lacking the keys of ``needed_keys``; an override adds its own
        checks (a model folder exists, a prompt template is known, options suit the LM backend)
        after ``super().check_run(run)``. Whether the LM server answers is checked by the run
        itself for methods with ``uses_lm``, only where the run will execute.
        """
        from llmexplore.errors import ConfigError, shown

        missing = [k for k in cls.needed_keys(run.task, run.options) if k not in run.obs_space.spaces]
        if missing:
            raise ConfigError(
                f"method '{cls.name}' needs observation keys {shown(missing)}, which task '{run.task.name}' "
                f"does not provide (it provides {sorted(run.obs_space.spaces)})",
                hint="`llmexplore methods` and `llmexplore envs` list which methods fit which tasks",
            )

    #: options whose value is a file or folder that decides what the method computes (a reward model,
    #: generated code, an embedding model): the run record keeps each one's sha256 (``artefacts``)
    artefact_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def artefacts(cls, options: MethodOptions) -> dict[str, str]:
        """The files and folders this configuration reads, by option name (unset options left out), so a
        record names by content, not only by path, what made its row."""
        values = {name: getattr(options, name, None) for name in cls.artefact_options}
        return {name: str(value) for name, value in values.items() if value}

    @classmethod
    def artefact_origins(cls, options: MethodOptions) -> dict[str, dict[str, Any]]:
        """What each artefact was made from, as the artefact itself records it (by artefact name), for the
        run record: a reward model names the checkpoint that collected its pairs by sha256, so a row names
        its whole lineage by content. Default: nothing recorded."""
        return {}

    # -- actor side ------------------------------------------------------------------------
    @classmethod
    def env_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        """Optional adapter keys (``make_env(extra_keys=...)``) the actor-side wrapper reads, e.g.
        NetHack's ``glyphs``. They are asked for when the env is built and removed again after
        ``wrap_env`` (unless the caller asked for them too), so they never reach the learner."""
        return ()

    @classmethod
    def wrap_env(cls, env: gym.Env, options: MethodOptions, context: MethodContext) -> gym.Env:
        """Add actor-side state and observation keys; runs in rollout workers."""
        return env

    # -- learner side ----------------------------------------------------------------------
    @abstractmethod
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """Intrinsic reward per transition, shape [N, T], before the c_int coefficient."""

    def return_ends(self, batch: RewardBatch) -> torch.Tensor | None:
        """[N, T], 1 where the return of transition t should end although the episode goes on;
        None (the default): returns end at episode ends only.

        Why: with options, each one maximises its own reward until it terminates, so its return
        must not include what is paid after it hands over (MaestroMotif's skills). The learner
        shows these ends to the advantage estimate only, not to the recurrent state.
        """
        return None

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """Online training step on the batch (after ``reward``); returns metrics to log."""
        return {}

    def carry(self, batch: RewardBatch, work: Any) -> None:
        """Called in ``reward``: keep ``work`` on ``batch`` for ``update`` (the module's contract), so that
        it is done once a batch."""
        self._carried = (batch, work)

    def carried(self, batch: RewardBatch) -> Any | None:
        """Called in ``update``: the work ``reward`` carried for this very batch, let go here; None where
        ``reward`` did not see it (``update`` then computes what it needs itself)."""
        carried, self._carried = getattr(self, "_carried", None), None
        return carried[1] if carried is not None and carried[0] is batch else None

    def metrics(self) -> dict[str, float]:
        """Counters worth logging (queue lengths, cache hits); called now and then."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """Everything the method has learned, saved in every checkpoint (tensors, numbers, lists)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` saved, when a run resumes or a policy is loaded."""
        pass

    def state_summary(self) -> dict[str, Any]:
        """A few JSON-able facts about the state (sizes, digests); the learner logs them after a
        resume so one can check what a resumed run started with."""
        return {}

    def close(self) -> None:
        """Stop background threads or connections."""
