"""The three ONI methods: ``oni-retrieval``, ``oni-classification``, ``oni-ranking``.

For the caption m_t of the observation a transition led to (the decoded NetHack message):

    retrieval:       r_int = label(m_t)                               (1 helpful, 0 otherwise or unlabelled)
    classification:  r_int = 1[p_helpful(m_t) > threshold]            (classifier trained on the labels)
    ranking:         z = (r(m_t) - mean) / std;  r_int = 1[z > eps] * z   (preference model, running mean/std)

each divided by N_ep(m_t)^beta (beta 3; the episodic count of the exact message, this step
included, from the actor-side ``EpisodicMessageCount`` wrapper) and 0 on transitions that
ended an episode (their next observation already belongs to the next episode).

Per learner batch: ``reward`` reads the current label table or model (a pure function of
the method's state, so evaluation can score episodes from a checkpoint without any LM);
``update`` merges labels that arrived since the last batch, sends the batch's unlabelled
captions (retrieval, classification) or random caption pairs from the reservoir (ranking)
to the annotation service, and trains the model on the published schedule
(``schedule.py``). Labels therefore reach the reward from the next batch on.

Where we differ from the published learner (besides the service's fixes, see
``labeler.py``, and the ranking and classifier notes in their modules): the reward belongs
to the observation the action led to (our batch convention) and is masked at episode ends;
model-based rewards are 0 until the model has taken its first gradient step; the ranking
reward is normalised with statistics of earlier batches (this batch's values update them in
``update``), so ``reward`` never changes state. On a CPU learner the reward model trains
on a thread of its own (``background.py``; upstream used a thread too) and the learner
scores with the copy published after its latest step; on a GPU learner, or with
``train_thread`` off, the steps run inside ``update``, within a share of wall time on CPU
(``train_time_share``).

State saved in every checkpoint: the caption vocabulary, the service's label table and
pending questions (and its counters), the model and optimizer, the schedule, the random
generator, and for ranking the caption reservoir and the running statistics. The labelled
training sets are rebuilt from the label table on resume.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping

import numpy as np
from pydantic import Field

from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY, EpisodicMessageCount
from llmexplore.errors import ConfigError, DataError
from llmexplore.lm.questions import Question
from llmexplore.methods import message_text
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.methods.base import (
    CheckContext,
    IntrinsicReward,
    MethodContext,
    MethodOptions,
    RewardBatch,
    no_grad,
)
from llmexplore.methods.oni.background import BackgroundTrainer
from llmexplore.methods.oni.labeler import OnlineLabeler
from llmexplore.methods.oni.schedule import TrainingSchedule
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover (the models load torch, in the learner only)
    import gymnasium as gym
    import torch

    from llmexplore.envs.base import TaskSpec
    from llmexplore.methods.oni.online_model import OnlineRewardModel

STATE_FORMAT = "oni-state-v1"
#: label codes of the retrieval table besides the LM's 0 / 1
NO_LABEL, UNKNOWN_LABEL = -1, -2
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


class _Oni(IntrinsicReward):
    """What the three variants share: captions, the labeler, counts, masking, metrics, state."""

    required_keys = ("message",)
    default_int_coef = 0.4
    uses_lm = True
    Options: ClassVar[type[OniOptions]] = OniOptions

    def __init__(self, options: OniOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        super().__init__(options, context, obs_space)
        from llmexplore.methods.oni.captions import CaptionVocabulary

        lm = context.lm
        self.vocab = CaptionVocabulary()
        self.rng = np.random.default_rng(context.seed)
        question = self.make_question(options, lm.prompts, context.task)
        self.labeler = OnlineLabeler(question, lm, cache_dir=context.run_dir,
                                     batch_size=options.lm_batch_size, max_pending=options.max_pending,
                                     close_wait_s=options.close_wait_s)
        self._last: tuple[Any, ...] | None = None
        # steps, steps with a labelled caption, rewarded steps, reward() calls, seconds in reward(), in update()
        self._counters = np.zeros(6)

    # -- configuration checks ------------------------------------------------------------------
    @classmethod
    def make_question(cls, options: OniOptions, prompts: str | None, task: TaskSpec) -> Question:
        """The question asked of each caption, in the words of the task's family (``methods/message_text.py``)."""
        raise NotImplementedError

    @classmethod
    def needed_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        return message_text.needed_keys(task)  # ``message``, unless the family writes it

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        super().check_run(run)
        cls.make_question(run.options, run.lm.prompts, run.task)  # the family's text, prompt version and goal exist

    @classmethod
    def wrap_env(cls, env: gym.Env, options: OniOptions, context: MethodContext) -> gym.Env:
        return EpisodicMessageCount(message_text.with_message(env, context.task, cls.name))

    # -- learner side ------------------------------------------------------------------------------
    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        import torch

        started = time.perf_counter()
        n, t = batch.shape
        nxt = batch.next_obs
        if EPISODIC_MESSAGE_COUNT_KEY not in nxt:
            raise ConfigError(f"{self.name} needs the observation key '{EPISODIC_MESSAGE_COUNT_KEY}' added by its env wrapper")
        distinct, inverse = self.vocab.index(nxt["message"])
        valid = batch.dones.reshape(-1).cpu().numpy() == 0
        values = self.caption_values(distinct)
        r = self.step_rewards(values[inverse], valid)
        counts = nxt[EPISODIC_MESSAGE_COUNT_KEY].reshape(-1).to("cpu", torch.float32).numpy()
        r_int = np.where(valid, r / np.maximum(counts, 1.0) ** self.options.beta, 0.0).astype(np.float32)
        labelled = self.caption_labelled(distinct)[inverse] & valid
        self._last = (batch, distinct, inverse, valid, values)
        self._counters[:5] += (valid.sum(), labelled.sum(), (r_int != 0).sum(), 1, time.perf_counter() - started)
        return torch.from_numpy(r_int.reshape(n, t)).to(batch.dones.device)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        started = time.perf_counter()
        if self._last is None or self._last[0] is not batch:
            self.reward(batch)
        _, distinct, inverse, valid, values = self._last
        self._last = None
        self.receive(self.labeler.poll())
        self.request(distinct, inverse, valid, values)
        self.train_models()
        self._counters[5] += time.perf_counter() - started
        return {}

    # -- what the variants define -------------------------------------------------------------------
    def caption_values(self, ids: np.ndarray) -> np.ndarray:
        """Per-caption value (float32) of distinct caption ids, before step-level transforms."""
        raise NotImplementedError

    def caption_labelled(self, ids: np.ndarray) -> np.ndarray:
        """Whether each caption id has a usable label (bool)."""
        raise NotImplementedError

    def step_rewards(self, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Per-step reward before the count division (default: the caption's value)."""
        return values

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Merge (item, label) pairs from the service."""
        raise NotImplementedError

    def request(self, distinct: np.ndarray, inverse: np.ndarray, valid: np.ndarray, values: np.ndarray) -> None:
        """Send this batch's questions to the service."""
        raise NotImplementedError

    def train_models(self) -> None:
        pass

    # -- reporting and state ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        steps, labelled, rewarded, batches, reward_s, update_s = self._counters
        stats = self.labeler.stats()
        out = {
            "oni_queue_length": stats["queue_length"],
            "oni_labels_per_second": stats["labels_per_second"],
            "oni_labels_total": stats["labels_total"],
            "oni_dedup_saved": stats["dedup_saved"],
            "oni_dropped": stats["dropped"],
            "oni_prompts_sent": stats["prompts_sent"],
            "oni_parse_failures": stats["parse_failures"],
            "oni_backend_errors": stats["backend_errors"],
            "oni_captions": float(len(self.vocab)),
        }
        if batches:
            out.update(oni_labelled_share=labelled / max(steps, 1), oni_rewarded_share=rewarded / max(steps, 1),
                       oni_reward_ms_per_batch=1000 * reward_s / batches, oni_update_ms_per_batch=1000 * update_s / batches)
        self._counters[:] = 0
        return {k: float(v) for k, v in out.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "method": self.name, "vocabulary": self.vocab.state_dict(),
                "service": self.labeler.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        if state.get("format") != STATE_FORMAT or state.get("method") != self.name:
            raise DataError(f"the checkpoint holds state of {state.get('method')!r} ({state.get('format')}), "
                            f"not of {self.name!r} ({STATE_FORMAT})",
                            hint="resume a run with the method it was started with")
        self.labeler.check_state(state["service"])  # before anything is loaded: labels of another question
        self.vocab.load_state_dict(state["vocabulary"])
        self.labeler.load_state_dict(state["service"])
        self.receive(self.labeler.labels().items())

    def state_summary(self) -> dict[str, Any]:
        service = self.labeler.state_dict()
        return {"captions": len(self.vocab), "labels": len(service["labels"]), "pending": len(service["pending"]),
                "labels_sha256": label_table_digest(service["labels"])}

    def close(self) -> None:
        self.labeler.close()


def label_table_digest(labels: Iterable[tuple[Any, Any] | list[Any]]) -> str:
    """sha256 of the label table as sorted JSON lines ``[item, label]`` (pairs as 2-lists)."""
    lines = sorted(json.dumps([list(i) if isinstance(i, (tuple, list)) else i, lab]) for i, lab in labels)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def caption_sequence_digest(captions: Iterable[str]) -> str:
    """sha256 of a sequence of captions as JSON lines, in order."""
    return hashlib.sha256("\n".join(json.dumps(c) for c in captions).encode()).hexdigest()


class _LabelTable:
    """Per-caption LM labels of retrieval and classification: -1 none yet, -2 unreadable, 0 / 1."""

    def __init__(self) -> None:
        self.codes = np.full(1024, NO_LABEL, dtype=np.int8)

    def ensure(self, size: int) -> None:
        if size > len(self.codes):
            grown = np.full(max(size, 2 * len(self.codes)), NO_LABEL, dtype=np.int8)
            grown[: len(self.codes)] = self.codes
            self.codes = grown

    def get(self, ids: np.ndarray) -> np.ndarray:
        return self.codes[ids]


@register_method
class OniRetrieval(_Oni):
    name = "oni-retrieval"
    display_name = "ONI (retrieval)"
    description = "ONI-Retrieval: the LM labels each new message online (helpful 1 / not 0); reward = label / count^beta"

    def __init__(self, options: OniOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        super().__init__(options, context, obs_space)
        self.table = _LabelTable()

    @classmethod
    def make_question(cls, options: OniOptions, prompts: str | None, task: TaskSpec) -> Question:
        """ONI's helpful-or-not question for ``goal`` in the chosen
        prompt version; ConfigError for an unknown goal or version."""
        asked = message_text.question_class(OniClassification, task, cls.name)
        return asked(goal=options.goal, version=options.prompt_version, prompts=prompts)

    def caption_values(self, ids: np.ndarray) -> np.ndarray:
        """1.0 for captions the LM labelled helpful, else 0 (unlabelled, unhelpful or unreadable), float32."""
        self.table.ensure(len(self.vocab))
        return (self.table.get(ids) == 1).astype(np.float32)

    def caption_labelled(self, ids: np.ndarray) -> np.ndarray:
        """Whether each caption has a readable 0/1 label (bool)."""
        self.table.ensure(len(self.vocab))
        return self.table.get(ids) >= 0

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Store each (caption, label) in the label table (None: unreadable, never
        asked again), numbering new captions, and hand it to ``on_label``."""
        for caption, label in labelled:
            cid = self.vocab.id_of(caption)
            self.table.ensure(cid + 1)
            self.table.codes[cid] = UNKNOWN_LABEL if label is None else int(label)
            self.on_label(cid, label)

    def on_label(self, caption_id: int, label: Any) -> None:
        """Hook for a label just stored; retrieval needs nothing more."""
        pass

    def request(self, distinct: np.ndarray, inverse: np.ndarray, valid: np.ndarray, values: np.ndarray) -> None:
        """Submit the batch's captions that have no label yet (the service skips those already pending)."""
        self.table.ensure(len(self.vocab))
        unseen = distinct[self.table.get(distinct) == NO_LABEL]
        self.labeler.submit([self.vocab.captions[i] for i in unseen])


class _OnlineModel:
    """Mixin: one reward model trained on the schedule, in the learner's loop or on its own thread."""

    model: OnlineRewardModel
    schedule: TrainingSchedule
    trainer: BackgroundTrainer | None

    def _setup_training(self, options: OniModelOptions, seed: int) -> None:
        on_thread = options.train_thread if options.train_thread is not None else self.device.type != "cuda"
        share = options.train_time_share
        if share is None:
            share = 1.0 if on_thread or self.device.type == "cuda" else CPU_TRAIN_TIME_SHARE
        self.schedule = TrainingSchedule(burst_steps=options.burst_steps, burst_until=options.burst_until,
                                         steps_per_batch=options.steps_per_batch, time_share=share)
        #: the training steps' own random stream (the learner's ``rng`` draws pairs and reservoir slots)
        self.train_rng = np.random.default_rng([seed, 1])
        self.trainer = None
        if on_thread:
            self.model.score_with_copies()
            self.trainer = BackgroundTrainer(self.schedule, self._train_step, self.model.publish,
                                             name=f"{self.name}-reward-model")

    def _train_step(self) -> None:
        self.model.train_step(self.vocab, self.train_rng)

    def train_models(self) -> None:
        self.schedule.on_batch(len(self.model))
        if self.trainer is None:
            self.schedule.run(self._train_step)
        else:
            self.trainer.check()
            self.trainer.start()

    def _training_paused(self) -> AbstractContextManager[Any]:
        """While held, no step runs, so the training state can be read or replaced whole."""
        return self.trainer.paused() if self.trainer is not None else nullcontext()

    def _model_metrics(self) -> dict[str, float]:
        out = {f"oni_rm_{k}": v for k, v in self.model.take_stats().items()}
        out.update(oni_rm_steps=float(self.schedule.steps_done), oni_rm_pending_steps=float(self.schedule.pending),
                   oni_rm_examples=float(len(self.model)), oni_rm_train_seconds=float(self.schedule.seconds),
                   oni_rm_scoring_steps=float(self.model.scoring_version))
        return out

    def _model_state(self) -> dict[str, Any]:
        with self._training_paused():
            return {"model": self.model.state_dict(), "schedule": self.schedule.state_dict(),
                    "rng": self.rng.bit_generator.state, "train_rng": self.train_rng.bit_generator.state}

    def _load_model_state(self, state: Mapping[str, Any]) -> None:
        with self._training_paused():
            self.model.load_state_dict(state["model"])
            self.schedule.load_state_dict(state["schedule"])
            self.rng.bit_generator.state = state["rng"]
            if "train_rng" in state:
                self.train_rng.bit_generator.state = state["train_rng"]

    def close(self) -> None:
        if self.trainer is not None:  # no step half-way through when the labeler and the run end
            self.trainer.close()
        super().close()  # type: ignore[misc]


@register_method
class OniClassificationMethod(_OnlineModel, OniRetrieval):
    name = "oni-classification"
    display_name = "ONI (classification)"
    description = ("ONI-Classification: a caption classifier trained online on the LM's helpful/not labels; "
                   "reward = 1[p > 0.5] / count^beta")
    Options = ClassificationOptions

    def __init__(self, options: ClassificationOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.oni.classifier import ClassifierModel

        super().__init__(options, context, obs_space)
        with torch.random.fork_rng(devices=[]):  # seeded weights without touching the policy's random stream
            torch.manual_seed(context.seed)
            self.model = ClassifierModel(lr=options.lr, batch_size=options.batch_size, threshold=options.threshold,
                                         dropout=options.dropout, device=self.device)
        self._setup_training(options, context.seed)

    def on_label(self, caption_id: int, label: Any) -> None:
        """Add a readable 0/1 label to the classifier's training set; a new example
        owes a burst of steps while labels are fewer than ``burst_until``."""
        if label in (0, 1) and self.model.add(caption_id, int(label)):
            self.schedule.on_new_labels(len(self.model))

    def caption_values(self, ids: np.ndarray) -> np.ndarray:
        """1.0 where the classifier's p(helpful) exceeds ``threshold``,
        else 0, float32; all 0 before its first step."""
        if not self.model.trained:
            return np.zeros(len(ids), dtype=np.float32)
        return self.model.values(ids, self.vocab)

    def metrics(self) -> dict[str, float]:
        """ONI's shared counters plus the classifier's loss, accuracy, steps and examples."""
        return {**super().metrics(), **self._model_metrics()}

    def state_dict(self) -> dict[str, Any]:
        """ONI's shared state (captions, label table, pending questions) plus classifier,
        optimiser, schedule and both random streams, read with training paused."""
        return {**super().state_dict(), **self._model_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the shared state (rebuilding the training set from the labels), then
        classifier, schedule and random streams; an empty state changes nothing."""
        super().load_state_dict(state)
        if state:
            self._load_model_state(state)

    def state_summary(self) -> dict[str, Any]:
        """ONI's shared summary plus the classifier's steps and training examples."""
        return {**super().state_summary(), "model_steps": self.model.version, "examples": len(self.model)}


@register_method
class OniRanking(_OnlineModel, _Oni):
    name = "oni-ranking"
    display_name = "ONI (ranking)"
    description = ("ONI-Ranking: LM preferences over random pairs of experienced messages train a Motif-style "
                   "reward model online; normalised, thresholded reward / count^beta")
    Options = RankingOptions

    def __init__(self, options: RankingOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        import torch

        from llmexplore.methods.common import RunningMeanStd
        from llmexplore.methods.oni.ranking import CaptionReservoir, RankingModel

        super().__init__(options, context, obs_space)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(context.seed)
            self.model = RankingModel(lr=options.lr, batch_size=options.batch_size, grad_clip=options.grad_clip,
                                      device=self.device)
        self._setup_training(options, context.seed)
        self.reservoir = CaptionReservoir(options.reservoir_size)
        self.stats = RunningMeanStd(())

    @classmethod
    def make_question(cls, options: RankingOptions, prompts: str | None, task: TaskSpec) -> Question:
        """Motif's preference question for ``goal`` in the chosen
        prompt version; ConfigError for an unknown goal or version."""
        asked = message_text.question_class(MotifPreference, task, cls.name)
        return asked(goal=options.goal, version=options.prompt_version, prompts=prompts)

    def caption_values(self, ids: np.ndarray) -> np.ndarray:
        """The preference model's raw r(m) per caption, float32; all 0 before its first step."""
        if not self.model.trained:
            return np.zeros(len(ids), dtype=np.float32)
        return self.model.values(ids, self.vocab)

    def step_rewards(self, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """z = (r - mean) / std with earlier batches' statistics, kept above ``threshold``,
        else 0; all 0 until the trained model's values have entered the statistics."""
        if not self.model.trained or float(self.stats.count) < 1:  # no statistics of the trained model yet
            return np.zeros_like(values)
        z = (values.astype(np.float64) - float(self.stats.mean)) / float(self.stats.std)
        return np.where(z > self.options.threshold, z, 0.0).astype(np.float32)

    def caption_labelled(self, ids: np.ndarray) -> np.ndarray:
        """Whether each caption is part of a labelled pair the model trains on (bool)."""
        return np.fromiter((int(i) in self.model.in_pairs for i in ids), dtype=bool, count=len(ids))

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Add the labelled caption pairs to the model's training set (unreadable ones are
        refused); new pairs owe a burst of steps while pairs are fewer than ``burst_until``."""
        added = False
        for (first, second), label in labelled:
            added |= self.model.add(self.vocab.id_of(first), self.vocab.id_of(second), int(label))
        if added:
            self.schedule.on_new_labels(len(self.model))

    def request(self, distinct: np.ndarray, inverse: np.ndarray, valid: np.ndarray, values: np.ndarray) -> None:
        """Fold the batch's values into the reward statistics (once trained), put
        every ``subsample``-th step's caption in the reservoir, and, while the
        LM queue is short, submit ``pairs_per_batch`` random reservoir pairs."""
        if self.model.trained:
            import torch

            self.stats.update(torch.from_numpy(values[inverse][valid]))
        self.reservoir.add(distinct[inverse][:: self.options.subsample], self.rng)
        pairs: list[tuple[str, str]] = []
        if self.labeler.stats()["queue_length"] < 2 * self.options.lm_batch_size:
            captions = self.vocab.captions
            pairs = [(captions[a], captions[b]) for a, b in self.reservoir.sample_pairs(self.options.pairs_per_batch, self.rng)]
        self.labeler.submit(pairs)

    def metrics(self) -> dict[str, float]:
        """ONI's shared counters, the model's training figures, the reservoir size and the reward statistics."""
        out = {**super().metrics(), **self._model_metrics()}
        out.update(oni_reservoir_size=float(self.reservoir.size), oni_reward_mean=float(self.stats.mean),
                   oni_reward_std=float(self.stats.std))
        return out

    def state_dict(self) -> dict[str, Any]:
        """ONI's shared state, model, schedule and random streams (read with
        training paused), the caption reservoir and the reward statistics."""
        return {**super().state_dict(), **self._model_state(), "reservoir": self.reservoir.state_dict(),
                "reward_stats": {k: v.clone() for k, v in self.stats.state_dict().items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore all that ``state_dict`` saved, rebuilding the pair training
        set from the label table; an empty state changes nothing."""
        super().load_state_dict(state)
        if state:
            self._load_model_state(state)
            self.reservoir.load_state_dict(state["reservoir"])
            self.stats.load_state_dict(state["reward_stats"])

    def state_summary(self) -> dict[str, Any]:
        """ONI's shared summary plus model steps, labelled pairs, reservoir
        size and captions offered, and a digest of the reservoir's captions."""
        captions = self.vocab.captions
        return {**super().state_summary(), "model_steps": self.model.version, "pairs": len(self.model),
                "reservoir": self.reservoir.size, "reservoir_seen": self.reservoir.seen,
                "reservoir_sha256": caption_sequence_digest(captions[i] for i in self.reservoir.ids[: self.reservoir.size])}
