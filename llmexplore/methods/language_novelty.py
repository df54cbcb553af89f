"""Language novelty without a language model: novelty of the caption's sentence embedding (ELLM's
``use_language`` baselines).

ELLM compared its LM-guided agent with RND, NovelD and APT that also measured novelty in the space of
a frozen sentence encoder applied to the text description of the state, so that "language helps
exploration" and "an LM helps exploration" can be told apart. Here the rollout workers add the key
``caption_embedding`` (unit-length, float32 [384] for all-MiniLM-L6-v2): the sentence embedding of the
adapter's caption of each observation (Crafter: what is in view, what the agent faces, the items it
holds with their counts and words for low vitals, as ELLM's text; NetHack: the message).
Methods with ``language=true`` add a second novelty term computed on that key, weighted by
``language_weight`` (ELLM: 0.5 for RND and NovelD). Each distinct caption is encoded once per worker.
RND normalises each term on its own by default, ELLM the weighted sum (``rnd.py``, ``language_normalize``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from llmexplore.methods.base import MethodContext

#: observation key of the caption's sentence embedding
CAPTION_EMBEDDING_KEY = "caption_embedding"
#: distinct captions a worker keeps embeddings of before it starts again (bounds memory)
MAX_CACHED_CAPTIONS = 50_000


class CaptionEmbeddingWrapper(gym.ObservationWrapper):
    """Adds ``caption_embedding`` to every observation (actor side)."""

    def __init__(self, env: gym.Env, context: MethodContext, model_path: str | None):
        from llmexplore.envs import make_adapter
        from llmexplore.methods.ellm.embedding import SentenceEmbedder, resolve_model_path

        super().__init__(env)
        self.adapter = make_adapter(context.task)
        self.embedder = SentenceEmbedder(resolve_model_path(model_path), max_cached=MAX_CACHED_CAPTIONS)
        spaces = dict(env.observation_space.spaces)
        spaces[CAPTION_EMBEDDING_KEY] = gym.spaces.Box(-1.0, 1.0, (self.embedder.dim,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """A copy of the observation with ``caption_embedding``: the unit-length float32
        [dim] embedding of the adapter's caption, encoded once per distinct caption."""
        caption = self.adapter.caption(observation)
        observation = dict(observation)
        observation[CAPTION_EMBEDDING_KEY] = self.embedder.vectors([caption])[0]
        return observation
