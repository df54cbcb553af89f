"""ELLM (Du et al., 2023): exploration toward goals a language model suggests.

One method name for both environments ELLM was published on, chosen by the task family:
Crafter (``crafter_goals``: free-form goals from the state caption, rewarded by sentence
similarity) and Housekeep (``housekeep_goals``: yes/no placement questions, rewarded by
exact pick/place matches). NetHack has no suggestion question, so ``ellm`` refuses it;
ONI's ELLM-BoW baseline (``ellm-bow``) is the NetHack variant.

Everything that talks to the LM or the embedding model runs in the rollout workers
(``wrap_env``); the learner only reads the per-transition reward from the ``ellm_reward``
observation key. The policy conditions on the ``ellm_goal`` key, the mean sentence
embedding of the current suggestions.

Where we differ from the published code (github.com/yuqingd/ellm):
* Learner: ELLM trained a DQN; we train ELLM on the same sample-factory APPO learner and
  policy network as every method in the suite, with the goal embedding as one more input.
* Goal input: ELLM's network encodes the joined goal text ("Your goal is: ...") with a
  frozen SBERT; we give the mean of the goals' sentence embeddings, computed actor side
  (each goal is encoded once per process, which keeps ELLM's cost small).
* Crafter: stock Crafter 1.8.3 with its 17 actions and episodes of up to 10,000 steps (the
  suite's Crafter protocol), not ELLM's fork with a verb-noun action space and 400-step
  episodes; action success is inferred from achievement counters (``crafter_events``).
* Embeddings: all-MiniLM-L6-v2 (offline package) instead of paraphrase-MiniLM-L3-v2.
* The oracle backend's Crafter goals are the LM layer's rule-based oracle, ELLM's
  SimpleOracle setting (prerequisites met by what is in view and in the inventory).
* Health: ELLM's reward is its health term plus the goal reward, but its Crafter fork sets
  the health term (health change / 10) to 0 before use, so the released code pays no
  health reward; ``health_coef`` (default 0) follows that, ``health_coef=0.1`` restores the
  term as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import gymnasium as gym

from llmexplore.envs.base import TaskSpec
from llmexplore.errors import ConfigError
from llmexplore.methods.base import CheckContext, IntrinsicReward, MethodContext, MethodOptions, RewardBatch
from llmexplore.methods.ellm.embedding import resolve_model_path
from llmexplore.methods.ellm.options import ELLMOptions
from llmexplore.methods.ellm.questions import FAMILY_QUESTIONS
from llmexplore.methods.ellm.wrapper import GOAL_KEY, REWARD_KEY
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: the observation keys each supported family's wrapper reads (the question it asks: ``FAMILY_QUESTIONS``)
FAMILY_KEYS = {
    "crafter": ("local_semantic", "facing", "inventory"),
    "housekeep": ("room", "rooms", "receptacles", "at", "objects", "object_on", "held"),
}


@register_method
class ELLM(IntrinsicReward):
    name = "ellm"
    display_name = "ELLM"
    description = "ELLM: reward achieving goals an LM suggests (Crafter: goal text; Housekeep: placements)"
    policy_keys = (GOAL_KEY,)
    default_int_coef = 1.0  # ELLM's reward replaces the task reward at full scale
    uses_lm = True
    Options: ClassVar[type[MethodOptions]] = ELLMOptions
    artefact_options = ("model_path",)

    @classmethod
    def needed_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        """The keys the family's wrapper reads (``FAMILY_KEYS``); none for a family ELLM refuses."""
        return FAMILY_KEYS.get(task.family, ())

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Refuse a family without a suggestion question, a missing embedding model or prompt
        template, and ``oracle_noise`` anywhere but Housekeep with the oracle backend."""
        from llmexplore.lm.templates import load_prompts

        task, options, lm = run.task, run.options, run.lm
        if task.family not in FAMILY_QUESTIONS:
            raise ConfigError(
                f"method 'ellm' cannot run on {task.family} task '{task.name}': ELLM asks the LM for goal "
                f"suggestions, and this suite has a suggestion question only for "
                f"{' and '.join(f'{f} ({q.kind})' for f, q in FAMILY_QUESTIONS.items())}",
                hint="on NetHack use 'ellm-bow' (ONI's ELLM baseline), or run 'ellm' on a crafter or housekeep task")
        super().check_run(run)
        resolve_model_path(options.model_path)
        load_prompts(lm.prompts).template(FAMILY_QUESTIONS[task.family].kind, options.prompt_version)
        if options.oracle_noise > 0 and (task.family != "housekeep" or lm.backend != "oracle"):
            raise ConfigError("the ellm option oracle_noise flips the oracle's Housekeep placement answers; "
                              f"it needs a housekeep task and lm.backend 'oracle' (got {task.family}, "
                              f"{lm.backend})", hint="drop oracle_noise, or run a housekeep task with the oracle")

    # -- actor side ----------------------------------------------------------------------------
    @classmethod
    def wrap_env(cls, env: gym.Env, options: ELLMOptions, context: MethodContext) -> gym.Env:
        """The family's goal wrapper (``factory.make_wrapper``), which adds ``ellm_goal`` and ``ellm_reward``."""
        from llmexplore.methods.ellm.factory import make_wrapper

        return make_wrapper(env, options, context)

    # -- learner side --------------------------------------------------------------------------
    def __init__(self, options: ELLMOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        super().__init__(options, context, obs_space)
        if REWARD_KEY not in obs_space.spaces:
            raise ConfigError(f"observations lack '{REWARD_KEY}': the env was not wrapped by ELLM.wrap_env")

    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """The ``ellm_reward`` the workers wrote into each next observation, [N, T] float32
        (an episode's last reward rides on the reset observation, so nothing is masked)."""
        return batch.next_obs[REWARD_KEY][..., 0].float()
