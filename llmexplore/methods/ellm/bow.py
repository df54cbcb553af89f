"""ELLM-BoW, ONI's ELLM baseline on NetHack: similarity of the message to a fixed goal text.

ONI (Zheng et al., 2024; ``cosine-bow`` in github.com/facebookresearch/oni) rewards a
message by the cosine similarity between bag-of-word-vector embeddings of the message and
of a fixed goal string, zeroed at or below a threshold, and divides it, like its other
message rewards, by the episodic count of the message to the power beta = 3:

    r_int = 1[cos > threshold] * cos(bag(m), bag(goal)) / N_ep(m)^3

As in ONI: the goal is the Motif goal instruction of ``goal`` (default ``defaultgoal``;
ours are in ``configs/prompts/motif_preference/goals.yaml``, in our words), the threshold
is ONI's ``eps_threshold_quantile`` default, -0.5, and an empty message earns 0. Where we
differ: the word vectors are the input token embeddings of the local MiniLM model, summed
over word pieces (``word_vectors``), not fastText's crawl-300d-2M-subword vectors, which
are not available offline. Computed actor side: a wrapper keeps the episode's message
counts and writes the reward into the ``ellm_bow_reward`` observation key (carried into
the reset observation at episode ends, like ELLM's; see ``wrapper``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import gymnasium as gym
import numpy as np
from pydantic import Field

from llmexplore.errors import ConfigError, shown
from llmexplore.methods.base import CheckContext, IntrinsicReward, MethodContext, MethodOptions, RewardBatch
from llmexplore.methods.ellm.embedding import resolve_model_path
from llmexplore.methods.ellm.word_vectors import WordPieceVectors, cosine
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import torch

REWARD_KEY = "ellm_bow_reward"
MESSAGE_KEY = "message"
_MAX_MEMO = 500_000


class ELLMBoWOptions(MethodOptions):
    model_path: str | None = Field(None, description="sentence-transformers folder whose token embeddings are the "
                                                     "word vectors; default: the bundled all-MiniLM-L6-v2")
    goal: str = Field("defaultgoal", description="Motif goal whose instruction is the goal text (goals.yaml)")
    goal_text: str | None = Field(None, description="the goal text itself, instead of a named goal")
    threshold: float = Field(-0.5, ge=-1.0, le=1.0, description="similarities at or below it earn 0 (ONI: -0.5)")
    count_exponent: float = Field(3.0, ge=0.0, description="beta of the episodic message count")


def goal_text(options: ELLMBoWOptions, prompts: str | None) -> str:
    """The fixed goal string: ``goal_text``, else the named Motif goal's instruction."""
    if options.goal_text is not None:
        text = options.goal_text
    else:
        from llmexplore.lm.templates import load_prompts

        goals = load_prompts(prompts).table("motif_preference", "goals")
        if options.goal not in goals:
            raise ConfigError(f"unknown goal {shown(options.goal)} for ellm-bow", hint=f"goals: {', '.join(goals)}")
        text = goals[options.goal]
    if not text.strip():
        raise ConfigError(f"ellm-bow needs a non-empty goal text (goal {shown(options.goal)} has none)",
                          hint="choose another goal, or set goal_text")
    return text


class MessageGoalReward(gym.Wrapper):
    """Adds ``ellm_bow_reward``: the BoW similarity of the new message, over its episodic count^beta."""

    def __init__(self, env: gym.Env, vectors: WordPieceVectors, goal: str, threshold: float, count_exponent: float):
        super().__init__(env)
        from llmexplore.envs.nethack.text import decode_message  # NetHack only: nle is an optional extra

        self._decode = decode_message
        self.vectors = vectors
        self.goal_vector = vectors.bag(goal)
        self.threshold = threshold
        self.beta = count_exponent
        spaces = dict(env.observation_space.spaces)
        spaces[REWARD_KEY] = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self._similarity: dict[bytes, float] = {}
        self._counts: dict[bytes, int] = {}
        self._pending = 0.0

    def similarity(self, message: np.ndarray) -> float:
        """Thresholded similarity of one raw message to the goal, memoised per message."""
        key = np.asarray(message, dtype=np.uint8).tobytes()
        found = self._similarity.get(key)
        if found is None:
            sim = cosine(self.vectors.bag(self._decode(message)), self.goal_vector)
            found = sim if sim > self.threshold else 0.0
            if len(self._similarity) >= _MAX_MEMO:
                self._similarity.clear()
            self._similarity[key] = found
        return found

    def _reward(self, message: np.ndarray) -> float:
        key = np.asarray(message, dtype=np.uint8).tobytes()
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        sim = self.similarity(message)
        return sim / count**self.beta if sim else 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Restart the message counts (the first message counts toward repeats); ``ellm_bow_reward``
        carries the reward of the step that ended the previous episode (0 if none)."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._counts = {}
        self._reward(obs[MESSAGE_KEY])  # the first message counts toward later repeats
        carried, self._pending = self._pending, 0.0
        obs[REWARD_KEY] = np.array([carried], dtype=np.float32)
        return obs, info

    def step(self, action):
        """Write the new message's reward into ``ellm_bow_reward`` ((1,) float32),
        and keep it for the reset observation when the step ends the episode."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        r = self._reward(obs[MESSAGE_KEY])
        if terminated or truncated:
            self._pending = r
        obs[REWARD_KEY] = np.array([r], dtype=np.float32)
        return obs, reward, terminated, truncated, info


@register_method
class ELLMBoW(IntrinsicReward):
    name = "ellm-bow"
    display_name = "ELLM (BoW)"
    description = "ELLM-BoW (ONI's baseline): bag-of-word-vector similarity of the message to a goal text"
    required_keys = (MESSAGE_KEY,)
    default_int_coef = 0.4  # ONI's c_int for its LM-feedback rewards
    Options: ClassVar[type[MethodOptions]] = ELLMBoWOptions
    artefact_options = ("model_path",)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse a missing word-vector model folder and an unknown or empty goal text."""
        super().check_run(run)
        resolve_model_path(run.options.model_path)
        goal_text(run.options, run.lm.prompts)

    @classmethod
    def wrap_env(cls, env: gym.Env, options: ELLMBoWOptions, context: MethodContext) -> gym.Env:
        """Add ``ellm_bow_reward``, computed in the worker; the word-vector table is loaded once per process."""
        from llmexplore.methods.ellm.shared import shared

        path = resolve_model_path(options.model_path)
        vectors = shared(("word_vectors", str(path.resolve())), lambda: WordPieceVectors(path))  # one table per process
        goal = goal_text(options, context.lm.prompts)
        return MessageGoalReward(env, vectors, goal, options.threshold, options.count_exponent)

    def __init__(self, options: ELLMBoWOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        super().__init__(options, context, obs_space)
        if REWARD_KEY not in obs_space.spaces:
            raise ConfigError(f"observations lack '{REWARD_KEY}': the env was not wrapped by ELLMBoW.wrap_env")

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """The ``ellm_bow_reward`` the workers wrote into each next observation, [N, T] float32
        (an episode's last reward rides on the reset observation, so nothing is masked)."""
        return batch.next_obs[REWARD_KEY][..., 0].float()
