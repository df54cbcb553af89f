"""What the RL engine offers the methods: the one module of ``agents/`` a method may import.

Some methods play a trained policy outside training: Motif collects its dataset with a checkpoint's
policy, MaestroMotif scores a zero-shot task with one. They load the policy, build the env it was
trained on and play episodes through the names below, so the engine's modules can change inside
without a method noticing (``tests/unit/test_layer_rules.py`` holds methods to this module).
"""

from __future__ import annotations

from llmexplore.agents.policy import Policy, load_policy
from llmexplore.agents.rollout import play_episode, single_thread
from llmexplore.agents.sf_env import build_env

__all__ = ["Policy", "build_env", "load_policy", "play_episode", "single_thread"]
