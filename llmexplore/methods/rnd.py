"""Random Network Distillation (Burda et al., 2019), trained online in the learner.

r_int(s') = ||f_pred(norm(s')) - f_target(norm(s'))||^2 / running std of that error,
where norm() is a running per-feature observation normalisation clipped to +-5, the
target network is fixed and random, and the predictor trains with Adam (lr 1e-4) on
every learner batch. Inputs are raw observation keys (default: the image on Crafter,
the map crop and bottom-line stats on NetHack, the symbolic room view on Housekeep), not
the policy's features, so the novelty signal does not move with the policy. The default keys
are the family's (``EnvFamily.novelty_keys``).

With ``language=true`` a second copy runs on the caption's sentence embedding (``language_novelty.py``).
By default each term is divided by its own running std before they are weighed and added
(``language_normalize=per_term``); ELLM divided the weighted sum of the raw errors by the running std of
that sum (``sum``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import Field

from llmexplore.envs.registry import find_family
from llmexplore.methods.base import IntrinsicReward, MethodContext, MethodOptions, RewardBatch, no_grad
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    import torch


def novelty_keys(family: str) -> tuple[str, ...]:
    """The observation keys a family names for novelty methods (``EnvFamily.novelty_keys``; empty: all)."""
    found = find_family(family)
    return found.novelty_keys if found else ()


class NoveltyOptions(MethodOptions):
    """The options RND and NovelD share (NovelD's N is RND's prediction error)."""

    keys: tuple[str, ...] | None = Field(None, description="observation keys fed to the networks (default: the family's)")
    lr: float = Field(1e-4, gt=0, allow_inf_nan=False, description="Adam learning rate of the predictor (published 1e-4)")
    feature_dim: int = Field(128, gt=0, le=4096, description="output size of the target and predictor networks")
    obs_clip: float = Field(5.0, gt=0, allow_inf_nan=False,
                            description="clip of the normalised observations (published 5)")
    update_fraction: float = Field(1.0, gt=0, le=1, description="share of a batch the predictor trains on")
    language: bool = Field(False, description="add the novelty of the caption's sentence embedding (ELLM's "
                                              "use_language baseline; language_novelty.py)")
    language_weight: float = Field(0.5, ge=0, le=100, allow_inf_nan=False,
                                   description="weight of the caption-novelty term (ELLM: 0.5)")
    model_path: str | None = Field(None, description="sentence-transformers folder for language=true "
                                                     "(default: the bundled all-MiniLM-L6-v2)")


class RNDOptions(NoveltyOptions):
    language_normalize: Literal["per_term", "sum"] = Field(
        "per_term", description="with language=true, divide each term by its own running std (per_term) or "
                                "the weighted sum of the raw errors by the sum's running std (sum, ELLM's)")
    error_normalize: Literal["auto", "own_std", "none"] = Field(
        "auto", description="divide the prediction error by its own running std: auto = with one reward stream "
                            "(the bonus needs a scale of its own) and with language=true, not with two streams, "
                            "where the running std of the intrinsic return is the one division (as published); "
                            "own_std = always (the suite's two-stream form before this option); none = never")


@register_method
class RND(IntrinsicReward):
    name = "rnd"
    display_name = "RND"
    description = "Random Network Distillation: prediction error of a random network (LM-free)"
    default_int_coef = 0.5  # Burda et al. weigh intrinsic:extrinsic advantages 1:2
    reward_streams = 2  # Burda et al.: an extrinsic and an intrinsic value head (train.reward_streams)
    update_beside_policy = True  # update reads the batch and trains its own networks only
    Options = RNDOptions
    artefact_options = ("model_path",)

    def __init__(self, options: NoveltyOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.common import ObservationFeatures, RunningMeanStd

        super().__init__(options, context, obs_space)
        self.keys = self.needed_keys(context.task, options) or tuple(obs_space.spaces)
        spaces = {k: obs_space.spaces[k] for k in self.keys}
        torch.manual_seed(context.seed)
        self.target = ObservationFeatures(spaces, options.feature_dim).to(self.device)
        self.predictor = ObservationFeatures(spaces, options.feature_dim).to(self.device)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=options.lr)
        self.obs_stats = {k: RunningMeanStd(self._stat_shape(spaces[k])).to(self.device) for k in self.keys}
        self.error_stats = RunningMeanStd(()).to(self.device)
        #: whether ``reward`` divides the error by ``error_stats``' std (``error_normalize``)
        self.divides_error = _divides_error(options, context)
        self._last_loss = float("nan")
        #: the same method on the caption embedding alone (``language=true``), else None
        self.language = self._language_twin(options, context, obs_space)
        #: statistics of the raw error + ``language_weight`` times the caption's (``language_normalize=sum``)
        self.sum_stats = (RunningMeanStd(()).to(self.device)
                          if self.language is not None and isinstance(options, RNDOptions)
                          and options.language_normalize == "sum" else None)

    def _language_twin(self, options: NoveltyOptions, context: MethodContext,
                       obs_space: gym.spaces.Dict) -> Any:
        from llmexplore.errors import ConfigError
        from llmexplore.methods.language_novelty import CAPTION_EMBEDDING_KEY

        if not options.language:
            return None
        if CAPTION_EMBEDDING_KEY not in obs_space.spaces:
            raise ConfigError(f"observations lack '{CAPTION_EMBEDDING_KEY}': the env was not wrapped by "
                              f"{self.name}.wrap_env with language=true")
        twin = options.model_copy(update={"language": False, "keys": (CAPTION_EMBEDDING_KEY,)})
        if isinstance(twin, RNDOptions) and twin.error_normalize == "auto":
            twin = twin.model_copy(update={"error_normalize": "own_std"})  # per_term: each term on its own scale
        return type(self)(twin, context, obs_space)

    @classmethod
    def check_run(cls, run) -> None:
        """Also refuse ``language=true`` when no sentence-embedding model folder can be found."""
        super().check_run(run)
        if run.options.language:
            from llmexplore.methods.ellm.embedding import resolve_model_path

            resolve_model_path(run.options.model_path)

    @classmethod
    def wrap_env(cls, env: gym.Env, options: NoveltyOptions, context: MethodContext) -> gym.Env:
        """With ``language=true``, add ``caption_embedding`` in the workers; otherwise the env unchanged."""
        if not options.language:
            return env
        from llmexplore.methods.language_novelty import CaptionEmbeddingWrapper

        return CaptionEmbeddingWrapper(env, context, options.model_path)

    @classmethod
    def needed_keys(cls, task, options: NoveltyOptions) -> tuple[str, ...]:
        """``keys`` when set, else the family's novelty keys; empty means every observation key."""
        return tuple(options.keys or novelty_keys(task.family))

    @staticmethod
    def _stat_shape(space: gym.spaces.Box) -> tuple[int, ...]:
        from llmexplore.methods.common import is_image

        # images: one statistic per channel; vectors and maps: one per element
        return (space.shape[-1],) if is_image(space) else tuple(space.shape)

    def _normalized(self, obs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        from llmexplore.methods.common import flat_batch

        inputs = flat_batch(obs, self.keys, cast=False)
        return {k: self.obs_stats[k].normalize(v, self.options.obs_clip) for k, v in inputs.items()}

    def _errors(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return (self.predictor(inputs) - self.target(inputs)).pow(2).mean(dim=1)

    def _training_loss(self, inputs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The predictor's loss on normalised inputs (with gradients) and each input's squared error
        [M] (detached, for the error statistics): RND's mean squared error."""
        errors = self._errors(inputs)
        return errors.mean(), errors.detach()

    @no_grad
    def prediction_error(self, batch: RewardBatch) -> torch.Tensor:
        """Raw squared prediction error per transition, [N, T]."""
        n, t = batch.shape
        return self._errors(self._normalized(batch.next_obs)).reshape(n, t)

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """Predictor error at s' over its running std (``error_normalize``: with one stream; with two the raw
        error, which the learner divides by the intrinsic return's running std), [N, T] float32; with
        ``language=true``, plus ``language_weight`` times the caption twin's reward, or with
        ``language_normalize=sum`` the raw error plus ``language_weight`` times the twin's, over that sum's
        running std. Changes no state."""
        if self.sum_stats is not None:
            return self._weighted_sum(batch) / self.sum_stats.std.float()
        own = self.prediction_error(batch)
        if self.divides_error:
            own = own / self.error_stats.std.float()
        if self.language is None:
            return own
        return own + self.options.language_weight * self.language.reward(batch)

    def _weighted_sum(self, batch: RewardBatch) -> torch.Tensor:
        """Raw error plus ``language_weight`` times the caption twin's raw error, [N, T] (ELLM's sum)."""
        weight = self.options.language_weight
        return self.prediction_error(batch) + weight * self.language.prediction_error(batch)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """Fold the next observations into the observation statistics, then one Adam step of
        the predictor on a random ``update_fraction`` of them (and of the language twin). With
        ``language_normalize=sum``, the weighted sums this batch's reward was made of (networks and
        statistics before this step) go into the sum's running statistics first."""
        import torch

        from llmexplore.methods.common import flat_batch

        if self.sum_stats is not None:
            self.sum_stats.update(self._weighted_sum(batch))
        raw = flat_batch(batch.next_obs, self.keys, cast=False)
        for key, value in raw.items():
            self.obs_stats[key].update(value)
        inputs = {k: self.obs_stats[k].normalize(v, self.options.obs_clip) for k, v in raw.items()}
        if self.options.update_fraction < 1.0:
            count = next(iter(inputs.values())).shape[0]
            keep = torch.rand(count, device=self.device) < self.options.update_fraction
            inputs = {k: v[keep] for k, v in inputs.items()}
        loss, errors = self._training_loss(inputs)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.error_stats.update(errors)
        self._last_loss = float(loss.detach())
        if self.language is not None:
            return {"rnd_loss": self._last_loss,
                    **{f"language_{k}": v for k, v in self.language.update(batch).items()}}
        return {"rnd_loss": self._last_loss}

    def state_dict(self) -> dict[str, Any]:
        """Predictor, target, optimiser, observation and error statistics, the language twin's state and,
        with ``language_normalize=sum``, the sum's statistics."""
        state = {
            "predictor": self.predictor.state_dict(),
            "target": self.target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "obs_stats": {k: v.state_dict() for k, v in self.obs_stats.items()},
            "error_stats": self.error_stats.state_dict(),
        }
        if self.language is not None:
            state["language"] = self.language.state_dict()
        if self.sum_stats is not None:
            state["language_sum_stats"] = self.sum_stats.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` saved; with ``language=true`` the state needs the twin's ``language``
        entry. A state without the sum's statistics (saved before ``language_normalize`` existed, or with
        ``per_term``) leaves them fresh."""
        self.predictor.load_state_dict(state["predictor"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        for key, stats in state["obs_stats"].items():
            self.obs_stats[key].load_state_dict(stats)
        self.error_stats.load_state_dict(state["error_stats"])
        if self.language is not None:
            self.language.load_state_dict(state["language"])
        if self.sum_stats is not None and "language_sum_stats" in state:
            self.sum_stats.load_state_dict(state["language_sum_stats"])


def _divides_error(options: NoveltyOptions, context: MethodContext) -> bool:
    """``error_normalize`` resolved for this run: ``auto`` divides unless the run trains two reward streams
    without the caption term (Burda et al. divide the error once, by the intrinsic return's running std)."""
    mode = getattr(options, "error_normalize", "own_std")
    if mode != "auto":
        return mode == "own_std"
    train = getattr(context.run, "train", None)
    return options.language or getattr(train, "reward_streams", 1) != 2
