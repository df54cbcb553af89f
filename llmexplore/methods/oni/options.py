"""The options of the three ONI methods: shared ones, those of a trained reward model, and each variant's."""

from __future__ import annotations

from pydantic import Field

from llmexplore.methods.base import MethodOptions

#: reward-model training share of wall time when it runs in a CPU learner's loop and none is set
CPU_TRAIN_TIME_SHARE = 0.25


class OniOptions(MethodOptions):
    beta: float = Field(3.0, ge=0, description="exponent of the episodic message count")
    prompt_version: str = Field("default", description="prompt template version of the question")
    goal: str = Field("defaultgoal", description="goal of the prompt: defaultgoal, combat or gold (published) "
                                                 "or minihack (a MiniHack level's stairs) for the classification "
                                                 "prompt; a Motif goal for the ranking prompt")
    lm_batch_size: int = Field(100, ge=1, description="questions per LM batch (published 100)")
    max_pending: int = Field(100_000, ge=1, description="questions waiting at most; more are refused and asked later")
    close_wait_s: float = Field(30.0, ge=0, description="at the end of training, wait this long for pending labels")


class OniModelOptions(OniOptions):
    lr: float = Field(1e-4, gt=0, description="Adam learning rate of the reward model")
    batch_size: int = Field(256, ge=1, description="labelled examples per reward-model step")
    burst_steps: int = Field(32, ge=0, description="steps when new labels arrive (published 32)")
    burst_until: int = Field(25_000, ge=0, description="labels from which on bursts stop (published 25,000)")
    steps_per_batch: int = Field(1, ge=0, description="steps per training batch from then on (published 1)")
    train_thread: bool | None = Field(
        None, description="train the reward model on a thread of its own beside the learner, as upstream ONI did "
                          "(default: on for a CPU learner, whose serial loop leaves a core idle; off on a GPU)")
    train_time_share: float | None = Field(
        None, gt=0, description="share of wall time reward-model training may take (>= 1: no limit); default 1 "
                                f"on a GPU learner or on its own thread, {CPU_TRAIN_TIME_SHARE} in a CPU learner's loop")


class ClassificationOptions(OniModelOptions):
    threshold: float = Field(0.5, gt=0, lt=1, description="reward 1 when p(helpful) exceeds this")
    dropout: float = Field(0.1, ge=0, lt=1, description="dropout rate of the classifier, in [0, 1)")


class RankingOptions(OniModelOptions):
    threshold: float = Field(-0.5, description="z-scored reward kept only above this (upstream default -0.5)")
    subsample: int = Field(10, ge=1, description="every k-th step of a batch enters the caption reservoir")
    pairs_per_batch: int = Field(10, ge=0, description="pairs sent per batch while the LM queue is short")
    reservoir_size: int = Field(100_000, ge=2, description="captions the reservoir holds")
    grad_clip: float = Field(
        10.0, gt=0, description="gradient-norm clip of the ranking model's updates (> 0)")
