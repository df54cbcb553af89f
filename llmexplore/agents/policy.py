"""A trained policy loaded from a run directory, acting on observations on CPU.

Evaluation, the visualizer and dataset collectors all roll out checkpoints. They share one
loader so that each of them checks the same things before any work: the directory is a
run, the checkpoint exists and was written by this run's method on this run's task, and its
weights fit the network the run's sample-factory config describes.

Typical use::

    policy = load_policy("runs/rnd-nethack", checkpoint="latest")
    env = policy.make_env()
    actor = policy.actor(greedy=False, seed=0)
    obs, _ = env.reset()
    while True:
        action = actor.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np
import torch

from llmexplore.agents.checkpoints import CHECKPOINT_KEY
from llmexplore.agents.checkpoints import list_checkpoints, load_checkpoint_file, sf_experiment_dir
from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.agents.run_settings import RUN_KEY, RunSettings
from llmexplore.atomic import file_sha256
from llmexplore.errors import ConfigError

#: key of the run settings in sample-factory's saved config (``cfg.llmexplore``)
SETTINGS_KEY = "llmexplore"
SF_CONFIG_FILE = "config.json"
_BEST = re.compile(r"best_(\d+)_(\d+)_reward_.*\.pth$")


@dataclass(frozen=True)
class CheckpointInfo:
    """Which checkpoint a policy came from: enough to cite it in a record."""

    path: Path
    kind: str  # "latest" | "best" | "path"
    env_steps: int
    sha256: str


# -- finding the run and its checkpoint --------------------------------------------------------
def read_run_settings(run_dir: str | Path) -> RunSettings:
    """The settings the run was trained with, from sample-factory's saved config."""
    run_dir = Path(run_dir).expanduser().resolve()
    if not run_dir.is_dir():
        raise ConfigError(f"run directory {run_dir} does not exist")
    config = sf_experiment_dir(run_dir) / SF_CONFIG_FILE
    if not config.is_file():
        hint = ("it has a run record but training never saved its config; run it again to train"
                if (run_dir / "run.json").is_file() else "pass the --out directory of `llmexplore run`")
        raise ConfigError(f"{run_dir} is not a trained run: no {config.relative_to(run_dir)}", hint=hint)
    cfg = _read_sf_config(config)
    if not isinstance(cfg.get(SETTINGS_KEY), dict):
        raise ConfigError(f"{config} was not written by llmexplore (no '{SETTINGS_KEY}' settings)")
    run = ResolvedRun.read(run_dir) or _run_of_sf_settings(cfg[SETTINGS_KEY], run_dir)
    # the directory may have moved since training; the method context must point at it now
    return RunSettings(run=run, run_dir=str(run_dir), device="cpu")


def _run_of_sf_settings(settings: Mapping[str, Any], run_dir: Path) -> ResolvedRun:
    """The resolved run from sample-factory's saved config: as is, or, for a run trained before resolved runs
    existed, its record's spec (every value resolved) with the network the settings named."""
    if RUN_KEY in settings:
        return RunSettings.from_dict(settings).run
    record = run_dir / "run.json"
    try:
        spec = json.loads(record.read_text())["spec"]
        return ResolvedRun.model_validate({**spec, "encoder": settings["encoder"],
                                           "policy_keys": tuple(settings.get("policy_keys", ()))})
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"{run_dir} was trained by an older llmexplore and its record {record.name} cannot "
                          f"tell how ({type(exc).__name__}: {exc})",
                          hint="train the run again with this version") from None


def resolve_checkpoint(run_dir: str | Path, checkpoint: str = "latest") -> tuple[Path, str]:
    """``latest`` | ``best`` | a file path -> (path, kind), with an error naming what exists."""
    run_dir = Path(run_dir).expanduser().resolve()
    folder = sf_experiment_dir(run_dir) / "checkpoint_p0"
    if checkpoint == "latest":
        found = list_checkpoints(run_dir)
        if not found:
            raise ConfigError(
                f"run {run_dir} has no checkpoint: found no {folder.relative_to(run_dir)}/checkpoint_*.pth, "
                f"expected at least one",
                hint="train the run first (`llmexplore run ... --out RUN_DIR`), or name a file with --checkpoint PATH",
            )
        return found[-1], "latest"
    if checkpoint == "best":
        best = sorted((p for p in folder.glob("best_*.pth") if _BEST.search(p.name)),
                      key=lambda p: int(_BEST.search(p.name).group(1)))
        if not best:
            have = ", ".join(p.name for p in list_checkpoints(run_dir)) or "none"
            raise ConfigError(
                f"run {run_dir} has no 'best' checkpoint: found no {folder.relative_to(run_dir)}/best_*.pth "
                f"(regular checkpoints: {have})",
                hint="sample-factory saves best checkpoints only with a short save_best_every_sec; use --checkpoint latest",
            )
        return best[-1], "best"
    path = Path(checkpoint).expanduser()
    for candidate in (path, run_dir / path):
        if candidate.is_file():
            return candidate.resolve(), "path"
    raise ConfigError(f"checkpoint {checkpoint} not found (expected 'latest', 'best' or a .pth file)")


def check_checkpoint_identity(data: Mapping[str, Any], path: Path, settings: RunSettings) -> None:
    """Refuse a checkpoint that another method or task wrote: its weights would mean nothing here."""
    if "model" not in data:
        raise ConfigError(f"{path} is not a sample-factory checkpoint (no 'model' entry)")
    ours = data.get(CHECKPOINT_KEY)
    if not isinstance(ours, Mapping):
        raise ConfigError(
            f"{path} was not written by llmexplore (no '{CHECKPOINT_KEY}' entry); "
            f"expected a checkpoint of method '{settings.run.method}' on task '{settings.run.task}'"
        )
    found = (ours.get("method"), ours.get("task"))
    expected = (settings.run.method, settings.run.task)
    if found != expected:
        raise ConfigError(
            f"checkpoint {path} belongs to method '{found[0]}' on task '{found[1]}', but run "
            f"{settings.run_dir} is method '{expected[0]}' on task '{expected[1]}'",
            hint="evaluate the checkpoint with the run directory that trained it",
        )


# -- the policy --------------------------------------------------------------------------------
class Policy:
    """sample-factory's actor-critic of one checkpoint, with the run's env and method.

    ``act`` takes a batch of observations (a leading batch dimension) and the RNN states
    and returns actions and new states; ``actor()`` wraps that for a single env.
    """

    def __init__(self, settings: RunSettings, cfg: Any, checkpoint: CheckpointInfo, checkpoint_data: Mapping[str, Any]):
        from sample_factory.model.actor_critic import create_actor_critic
        from sample_factory.model.model_utils import get_rnn_size

        _register_encoders()
        self.settings = settings
        self.cfg = cfg
        self.checkpoint = checkpoint
        self.method_state: Mapping[str, Any] = checkpoint_data[CHECKPOINT_KEY].get("method_state", {})
        probe = self.make_env()
        try:
            self.observation_space: gym.spaces.Dict = probe.observation_space
            self.action_space: gym.spaces.Space = probe.action_space
            self.action_names: list[str] = list(getattr(probe.unwrapped, "action_names", []))
            self.replayable = callable(getattr(probe.unwrapped, "seed_episodes", None))
        finally:
            probe.close()
        self.obs_keys: tuple[str, ...] = tuple(self.observation_space.spaces)
        self.rnn_size = int(get_rnn_size(cfg))
        self.model = create_actor_critic(cfg, self.observation_space, self.action_space)
        try:
            self.model.load_state_dict(checkpoint_data["model"])
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0]
            raise ConfigError(f"checkpoint {checkpoint.path} does not fit the network of run {settings.run_dir}: {first}",
                              hint="was the run's sf/config.json edited, or the checkpoint copied from another run?") from None
        self.model.eval()

    # -- environments and the method -----------------------------------------------------------
    def make_env(self, extra_keys: Sequence[str] = ()) -> gym.Env:
        """An env as in training (adapter, the method's actor-side wrapper, the env tag)."""
        from llmexplore.agents.sf_env import build_env

        return build_env(self.settings, uid=0, extra_keys=tuple(extra_keys))

    def make_method(self):
        """The run's intrinsic reward with the state it had when the checkpoint was saved."""
        method_cls, options = self.settings.method_class_and_options()
        method = method_cls(options, self.settings.method_context(), self.observation_space)
        method.load_state_dict(self.method_state)
        return method

    # -- acting --------------------------------------------------------------------------------
    def initial_state(self, batch: int = 1) -> torch.Tensor:
        """The RNN state at an episode's start: zeros, [batch, rnn_size]."""
        return torch.zeros(batch, self.rnn_size)

    @torch.no_grad()
    def distribution(self, obs: Mapping[str, Any], state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action probabilities [B, A] and the new RNN state, for a batch of observations."""
        from sample_factory.algo.utils.rl_utils import prepare_and_normalize_obs

        batch = {k: torch.as_tensor(np.asarray(obs[k])) for k in self.obs_keys}
        normalized = prepare_and_normalize_obs(self.model, batch)
        head = self.model.forward_head(normalized)
        core, new_state = self.model.forward_core(head, state)
        self.model.forward_tail(core, values_only=False, sample_actions=False)
        return self.model.last_action_distribution.probs, new_state

    def act(self, obs: Mapping[str, Any], state: torch.Tensor, *, greedy: bool = True,
            generator: torch.Generator | None = None) -> tuple[np.ndarray, torch.Tensor]:
        """Actions [B] (argmax, or sampled with ``generator``) and the new RNN state."""
        probs, new_state = self.distribution(obs, state)
        if greedy:
            actions = probs.argmax(dim=-1)
        else:
            actions = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        return actions.numpy(), new_state

    def actor(self, greedy: bool = True, seed: int | None = None) -> "Actor":
        """An ``Actor`` for one env: greedy or sampled actions, ``seed`` for reproducible sampling."""
        return Actor(self, greedy=greedy, seed=seed)


class Actor:
    """A policy bound to one env: keeps the RNN state and the sampling generator."""

    def __init__(self, policy: Policy, greedy: bool = True, seed: int | None = None):
        self.policy = policy
        self.greedy = greedy
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Call at the start of each episode; a seed makes sampled actions reproducible."""
        self.state = self.policy.initial_state(1)
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(int(seed))

    def act(self, obs: Mapping[str, np.ndarray]) -> int:
        """The action for one observation (no batch dimension); keeps the RNN state for the next call."""
        batch = {k: np.asarray(obs[k])[None] for k in self.policy.obs_keys}
        actions, self.state = self.policy.act(batch, self.state, greedy=self.greedy, generator=self.generator)
        return int(actions[0])


def load_policy(run_dir: str | Path, checkpoint: str = "latest") -> Policy:
    """Load a run's checkpoint (``latest``, ``best`` or a path) after checking it belongs to the run."""
    settings = read_run_settings(run_dir)
    path, kind = resolve_checkpoint(settings.run_dir, checkpoint)
    data = load_checkpoint_file(path, "cpu")
    check_checkpoint_identity(data, path, settings)
    cfg = _sf_config(settings)
    env_steps = int(data.get("env_steps", 0))
    info = CheckpointInfo(path=path, kind=kind, env_steps=env_steps, sha256=file_sha256(path))
    return Policy(settings, cfg, info, data)



# -- helpers -----------------------------------------------------------------------------------
def _read_sf_config(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None


def _sf_config(settings: RunSettings):
    """sample-factory's saved config as the AttrDict its model code reads, set for CPU."""
    from sample_factory.utils.attr_dict import AttrDict

    data = _read_sf_config(sf_experiment_dir(settings.run_dir) / SF_CONFIG_FILE)
    data["device"] = "cpu"
    data[SETTINGS_KEY] = settings.to_dict()
    return AttrDict(data)


def _register_encoders() -> None:
    from sample_factory.algo.utils.context import global_model_factory

    from llmexplore.agents.encoders import make_encoder
    from llmexplore.agents.reward_streams import make_actor_critic

    global_model_factory().register_encoder_factory(make_encoder)
    global_model_factory().register_actor_critic_factory(make_actor_critic)  # two reward streams: two value heads
