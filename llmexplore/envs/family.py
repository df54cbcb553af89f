"""An environment family as one frozen object: everything the generic layers ask about it.

Each family declares its ``EnvFamily`` in its own folder (``envs/<family>/family.py``) and
``envs/__init__.py`` registers it with one line. The training engine, the methods, the
benchmarks and the visualiser never name a family: they look it up (``envs.get_family``) and
read what it declares here. Code is named by dotted ``module:name`` strings, imported only
when used, so reading a family imports neither torch nor the simulator.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from llmexplore.envs.base import TaskSpec

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import numpy as np


def import_path(path: str) -> Any:
    """The object a ``package.module:name`` string names."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"'{path}' is not a 'package.module:name' path")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Network:
    """A policy network on offer (``-t network=<key>``)."""

    #: the encoder's name in run settings and checkpoints (unique over all families)
    name: str
    #: ``module:Class`` of the sample-factory encoder (called with ``cfg, obs_space, policy_keys``);
    #: a class attribute ``extra_obs_keys`` asks the adapter for keys beyond its defaults
    encoder: str
    #: what the network is and where it comes from (``llmexplore options --task T`` prints it)
    description: str = ""


@dataclass(frozen=True)
class Normalization:
    """Where the family's benchmark metric maps to 0 and 1 in the cross-task aggregate."""

    metric: str
    low: float
    high: float
    note: str  # where the points come from, printed under the aggregate table
    #: task name -> its own 0 where tasks differ in what chance achieves (MiniHack's random policy)
    task_low: Mapping[str, float] = field(default_factory=dict)

    def low_for(self, task: str) -> float:
        """The metric value that maps to 0 on this task."""
        return self.task_low.get(task, self.low)


@dataclass(frozen=True)
class StatsFile:
    """A file the cell writes at the end in the family's own format (e.g. for upstream analysis scripts)."""

    name: str  # in the run folder; named in ``run.json``'s files
    keys: tuple[str, ...]  # episode-row keys it keeps, in this order


@dataclass(frozen=True)
class ScreenFactory:
    """How the visualiser draws an observation: ``factory(**options)`` returns a screen."""

    factory: str  # ``module:callable``
    options: Mapping[str, Any] = field(default_factory=dict)


class MessageSource(Protocol):
    """A family's side of the text Motif and ONI judge: 256 NUL-padded latin-1 bytes under ``message``."""

    #: optional adapter keys a Motif pair dataset keeps (asked for with ``make_env(extra_keys=...)``)
    extra_keys: tuple[str, ...]
    #: observation keys a pair dataset stores beside ``message`` (``data/<key>.npy``)
    data_keys: tuple[str, ...]

    def wrap(self, env: gym.Env) -> gym.Env:
        """The env with ``message`` in its observations (unchanged where it has one already)."""

    def playing(self, obs: Mapping[str, np.ndarray]) -> bool:
        """Whether the observation shows a game in progress, worth judging (a game-over screen is not)."""

    def info(self, data: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per-observation figures (e.g. the game score) a pair dataset keeps in ``info/``, from its data arrays."""


@dataclass(frozen=True)
class MessageText:
    """What Motif and ONI judge in this family, so neither names a family: the text of one observation, as
    256 NUL-padded latin-1 bytes under the observation key ``message`` (NetHack prints its own; a family
    whose game prints none writes a caption there), and the questions asked of it."""

    #: ``module:object`` of the family's ``MessageSource``
    source: str
    #: a question kind Motif or ONI asks -> the kind asked of this family's text instead (its own wording,
    #: goals and oracle answers); a kind not listed is asked as it is
    questions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvFamily:
    """One environment family: its tasks, adapter and what every generic layer needs to know."""

    name: str
    #: the family's name in gymnasium ids (``llmexplore/<title><Task>-v0``)
    title: str
    #: ``module:Class`` of its ``EnvAdapter``; imported only when a task is used
    adapter: str
    #: the pip extra that installs the simulator, and a module whose import proves it is there
    extra: str
    probe_module: str
    tasks: tuple[TaskSpec, ...]
    #: training defaults filled in where a run leaves them unset (``agents/train_config.py``)
    train_defaults: Mapping[str, Any]
    #: ``-t network=<key>`` -> network; "small" is the default
    networks: Mapping[str, Network]
    #: ``-t preset=<key>`` -> training settings (``TrainConfig`` fields) filled in where a run leaves them
    #: unset; a preset's ``sf_args`` are merged under the run's own
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: preset -> what it is and its source (``llmexplore options --task T`` prints it)
    preset_notes: Mapping[str, str] = field(default_factory=dict)
    #: observation keys RND and APT read by default (empty: every key)
    novelty_keys: tuple[str, ...] = ()
    normalization: Normalization | None = None
    #: final metrics shown as extra per-task leaderboard columns when present
    extra_columns: tuple[str, ...] = ()
    #: final metric -> what it is, said under every leaderboard table that shows it as a column
    column_notes: Mapping[str, str] = field(default_factory=dict)
    #: final metrics with a known range (``fnmatch`` pattern -> inclusive low, high): the leaderboard
    #: refuses a record with a value outside it (a 200% score is a damaged or tampered record)
    metric_ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: achievements whose ``success_<name>`` final metrics get a per-task table and bar plot
    achievements: tuple[str, ...] = ()
    stats_file: StatsFile | None = None
    #: env steps/s of one training process on the reference machine (2 CPU cores), for budget estimates
    reference_steps_per_second: int = 1_000
    #: env steps/s of whole training runs measured on a 16-core GPU machine (16 rollout workers, training on the
    #: GPU; docs/GPU.md), by network name ("*": any network); empty where not measured (``budget.training_rate``)
    gpu_machine_steps_per_second: Mapping[str, int] = field(default_factory=dict)
    #: keys of the adapter's ``environment_info`` naming a version of the game itself (e.g. its simulator
    #: package): records stating two versions of one are never ranked in one table (a new release can
    #: change the game)
    game_version_keys: tuple[str, ...] = ()
    #: game version key -> the version a record that does not state it was made with (records stopped omitting
    #: it at one commit, and every commit before required this version), so that such a record is never ranked
    #: beside a record of another version
    game_versions_unrecorded: Mapping[str, str] = field(default_factory=dict)
    #: None: the visualiser shows the adapter's caption as text
    screen: ScreenFactory | None = None
    #: names in ``llmexplore.data.catalog`` (or "balrog", shipped) the family's tasks or metrics read
    data_sources: tuple[str, ...] = ()
    #: question kind (``<prompts>/<kind>/``) -> ``module:function`` answering it in the embedded oracle
    #: (called with an ``lm.oracle.OracleQuery``, returns the reply text); a kind belongs to one family.
    #: ``<kind>@<goal>`` answers only the questions of that kind asking that goal (its sentence in the kind's
    #: ``goals.yaml``), e.g. MiniHack's own goal of NetHack's message questions
    oracle_answers: Mapping[str, str] = field(default_factory=dict)
    #: the text Motif and ONI judge (None: the family offers them none, and they refuse its tasks)
    message_text: MessageText | None = None

    def __post_init__(self) -> None:
        if "small" not in self.networks:
            raise ValueError(f"family '{self.name}' must offer a 'small' network")
        for preset, settings in self.presets.items():
            network = settings.get("network", "small")
            if network not in self.networks:
                raise ValueError(f"preset '{preset}' of family '{self.name}' names the network '{network}', "
                                 f"which the family does not offer")
        unknown_notes = sorted(set(self.preset_notes) - set(self.presets))
        if unknown_notes:
            raise ValueError(f"family '{self.name}' has notes for presets it does not offer: {unknown_notes}")
        for task in self.tasks:
            if task.family != self.name or not task.name.startswith(f"{self.name}:"):
                raise ValueError(f"task '{task.name}' does not belong to family '{self.name}'")

    @property
    def metric(self) -> str | None:
        """The benchmark metric the family's normalisation points refer to, if it has any."""
        return self.normalization.metric if self.normalization else None
