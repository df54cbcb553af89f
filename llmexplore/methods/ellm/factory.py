"""Builds ELLM's actor-side wrapper for a task: the embedding model, the LM, the family's wrapper.

Runs in each rollout worker, once per env copy; the model, the LM and the answer tables are
shared by the copies of one process (``shared``). The LM comes from the run's ``LMConfig``
through ``make_lm`` (persistent cache; default file ``<run dir>/lm-cache.sqlite3``, or the
config's ``cache``).
With the oracle on Housekeep, ``oracle_noise`` becomes the oracle's ``placement_noise``
option, which is part of its model id, so noisy and exact answers never share cache rows.
"""

from __future__ import annotations

import gymnasium as gym

from llmexplore.methods.base import MethodContext
from llmexplore.methods.ellm import shared
from llmexplore.methods.ellm.embedding import resolve_model_path
from llmexplore.methods.ellm.options import ELLMOptions
from llmexplore.methods.ellm.questions import FAMILY_QUESTIONS
from llmexplore.methods.ellm.wrapper import GoalRewardWrapper


def make_wrapper(env: gym.Env, options: ELLMOptions, context: MethodContext) -> GoalRewardWrapper:
    """The family's goal wrapper around ``env`` (Crafter or Housekeep), its embedder, LM and answer
    table shared per process; AssertionError for another family, which ``check_run`` refuses first."""
    family = context.task.family
    config = context.lm
    if family == "housekeep" and config.backend == "oracle" and options.oracle_noise > 0:
        config = config.model_copy(update={"options": {**config.options, "placement_noise": options.oracle_noise,
                                                       "placement_seed": options.oracle_noise_seed}})
    embedder = shared.embedder(resolve_model_path(options.model_path))
    lm = shared.language_model(config, context.run_dir)
    params = config.sampling()
    # one answer table per LM connection, question and sampling settings
    table_key = ("answers", family, options.prompt_version, config.model_dump_json(),
                 config.cache_path(context.run_dir), params.cache_text())

    def question():
        return FAMILY_QUESTIONS[family](version=options.prompt_version, prompts=config.prompts)

    if family == "crafter":
        from llmexplore.methods.ellm.asking import GoalSuggester
        from llmexplore.methods.ellm.crafter_goals import CrafterGoals

        suggester = shared.shared(table_key, lambda: GoalSuggester(lm, question(), params))
        return CrafterGoals(env, embedder, suggester, threshold=options.threshold, novelty=options.novelty,
                            goal_conditioning=options.goal_conditioning, health_coef=options.health_coef)
    if family == "housekeep":
        from llmexplore.envs import make_adapter
        from llmexplore.methods.ellm.asking import PlacementAnswers
        from llmexplore.methods.ellm.housekeep_goals import HousekeepGoals

        answers = shared.shared(table_key, lambda: PlacementAnswers(lm, question(), params))
        rewards = {"suggested": options.suggested_reward, "unsuggested": options.unsuggested_reward,
                   "failed": options.failed_reward}
        return HousekeepGoals(env, embedder, answers, make_adapter(context.task).vocab, rewards=rewards,
                              novelty=options.novelty, goal_conditioning=options.goal_conditioning)
    raise AssertionError(f"ELLM.check_run admits no {family} task")
