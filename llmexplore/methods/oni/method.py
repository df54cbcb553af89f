"""The three ONI methods: ``oni-retrieval``, ``oni-classification``, ``oni-ranking``.

For the caption m_t of the observation a transition led to (the decoded NetHack message):

    retrieval:       r_int = label(m_t)                               (1 helpful, 0 otherwise or unlabelled)
    classification:  r_int = 1[p_helpful(m_t) > threshold]            (classifier trained on the labels)
    ranking:         z = (r(m_t) - mean) / std;  r_int = 1[z > eps] * z   (preference model, running mean/std)

each divided by N_ep(m_t)^beta (beta 3; the episodic count of the exact message, this step
included, from the actor-side ``EpisodicMessageCount`` wrapper) and 0 on transitions that
ended an episode (their next observation already belongs to the next episode).

Each variant is one class below, written out step by step; what they share are the functions
and parts of ``pieces.py`` (captions, counts, metrics, state) and ``model_training.py`` (the
reward model's schedule and thread). Per learner batch: ``reward`` reads the current label table
or model (a pure function of the method's state, so evaluation can score episodes from a checkpoint
without any LM) and carries the batch's captions to ``update`` (``IntrinsicReward.carry``);
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

import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from llmexplore.envs.wrappers import EpisodicMessageCount
from llmexplore.lm.questions import Question
from llmexplore.methods import message_text
from llmexplore.methods.base import CheckContext, IntrinsicReward, MethodContext, MethodOptions, RewardBatch, no_grad
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.labeler import OnlineLabeler
from llmexplore.methods.oni.options import ClassificationOptions, OniOptions, RankingOptions
from llmexplore.methods.oni.pieces import (CaptionBatch, LabelTable, RewardCounters, as_reward_tensor,
                                           caption_sequence_digest, count_divided, load_shared_state,
                                           read_captions, shared_metrics, shared_state, shared_summary)
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.methods.registry import register_method

if TYPE_CHECKING:  # pragma: no cover (the models load torch, in the learner only)
    import gymnasium as gym
    import torch

    from llmexplore.envs.base import TaskSpec
    from llmexplore.methods.oni.background import BackgroundTrainer
    from llmexplore.methods.oni.schedule import TrainingSchedule


def labeler_for(question: Question, options: OniOptions, context: MethodContext) -> OnlineLabeler:
    """The method's link to the annotation service, for ``question``."""
    return OnlineLabeler(question, context.lm, cache_dir=context.run_dir, batch_size=options.lm_batch_size,
                         max_pending=options.max_pending, close_wait_s=options.close_wait_s)


def seeded_model(build: Any, seed: int) -> Any:
    """``build()`` with seeded weights, without touching the policy's random stream."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def helpful_question(options: OniOptions, prompts: str | None, task: TaskSpec, method: str) -> Question:
    """ONI's helpful-or-not question for ``goal`` in the chosen prompt version, in the words of the task's family
    (``methods/message_text.py``); ConfigError for an unknown goal or version."""
    asked = message_text.question_class(OniClassification, task, method)
    return asked(goal=options.goal, version=options.prompt_version, prompts=prompts)


def needed_message_keys(task: TaskSpec) -> tuple[str, ...]:
    """``message``, unless the family writes it itself (Crafter's captions)."""
    return message_text.needed_keys(task)


def counted_messages(env: gym.Env, context: MethodContext, method: str) -> gym.Env:
    """The family's message in each observation, counted within its episode (N_ep)."""
    return EpisodicMessageCount(message_text.with_message(env, context.task, method))


def merge_labels_and_ask(method: Any, batch: RewardBatch) -> None:
    """The label half of retrieval's and classification's ``update``: store the labels that arrived in the
    method's table (``method.receive``), then ask the LM about the batch's captions that have none (the
    captions ``reward`` carried over, or read again for a batch it never saw)."""
    captions: CaptionBatch = method.carried(batch) or read_captions(method.name, method.vocab, batch)
    method.receive(method.labeler.poll())
    method.labeler.submit(method.table.unlabelled_captions(method.vocab, captions.distinct))


@register_method
class OniRetrieval(IntrinsicReward):
    name = "oni-retrieval"
    display_name = "ONI (retrieval)"
    description = "ONI-Retrieval: the LM labels each new message online (helpful 1 / not 0); reward = label / count^beta"
    required_keys = ("message",)
    default_int_coef = 0.4
    uses_lm = True
    Options = OniOptions

    def __init__(self, options: OniOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.oni.captions import CaptionVocabulary

        super().__init__(options, context, obs_space)
        self.vocab = CaptionVocabulary()
        self.rng = np.random.default_rng(context.seed)
        self.labeler = labeler_for(helpful_question(options, context.lm.prompts, context.task, self.name), options,
                                   context)
        self.counters = RewardCounters()
        self.table = LabelTable()

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse an unknown prompt version or goal."""
        super().check_run(run)
        helpful_question(run.options, run.lm.prompts, run.task, cls.name)  # type: ignore[arg-type]

    @classmethod
    def needed_keys(cls, task: TaskSpec, options: MethodOptions) -> tuple[str, ...]:
        return needed_message_keys(task)

    @classmethod
    def wrap_env(cls, env: gym.Env, options: OniOptions, context: MethodContext) -> gym.Env:
        """The family's message, counted within its episode (N_ep)."""
        return counted_messages(env, context, cls.name)

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """label(m) / N_ep(m)^beta per step: 1 for captions the LM labelled helpful, else 0."""
        started = time.perf_counter()
        captions = read_captions(self.name, self.vocab, batch)
        self.table.ensure(len(self.vocab))
        codes = self.table.get(captions.distinct)
        r_int = count_divided((codes == 1).astype(np.float32)[captions.inverse], captions, self.options.beta)
        self.carry(batch, captions)
        self.counters.rewarded(captions, (codes >= 0)[captions.inverse] & captions.valid, r_int, started)
        return as_reward_tensor(r_int, captions, batch)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """Merge the labels that arrived, then ask for the batch's captions that have none."""
        started = time.perf_counter()
        merge_labels_and_ask(self, batch)
        self.counters.updated(started)
        return {}

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Store each (caption, label) from the service in the label table."""
        self.table.store(self.vocab, labelled)

    def metrics(self) -> dict[str, float]:
        """The service's figures and the shares of labelled and rewarded steps since the last row."""
        return shared_metrics(self.labeler, self.vocab, self.counters)

    def state_dict(self) -> dict[str, Any]:
        """The caption vocabulary, the service's label table and pending questions."""
        return shared_state(self.name, self.vocab, self.labeler)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore vocabulary and service, and the label table from the labels; an empty state changes nothing."""
        load_shared_state(self.name, self.vocab, self.labeler, state, self.receive)

    def state_summary(self) -> dict[str, Any]:
        """Captions, labels, pending questions and the label table's digest."""
        return shared_summary(self.vocab, self.labeler)

    def close(self) -> None:
        """Wait (bounded) for pending labels, then stop the service."""
        self.labeler.close()


@register_method
class OniClassificationMethod(IntrinsicReward):
    name = "oni-classification"
    display_name = "ONI (classification)"
    description = ("ONI-Classification: a caption classifier trained online on the LM's helpful/not labels; "
                   "reward = 1[p > 0.5] / count^beta")
    required_keys = ("message",)
    default_int_coef = 0.4
    uses_lm = True
    Options = ClassificationOptions

    def __init__(self, options: ClassificationOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.oni.captions import CaptionVocabulary
        from llmexplore.methods.oni.classifier import ClassifierModel
        from llmexplore.methods.oni.model_training import ModelTraining

        super().__init__(options, context, obs_space)
        self.vocab = CaptionVocabulary()
        self.rng = np.random.default_rng(context.seed)
        self.labeler = labeler_for(helpful_question(options, context.lm.prompts, context.task, self.name), options,
                                   context)
        self.counters = RewardCounters()
        self.table = LabelTable()
        self.model = seeded_model(lambda: ClassifierModel(
            lr=options.lr, batch_size=options.batch_size, threshold=options.threshold, dropout=options.dropout,
            device=self.device), context.seed)
        self.training = ModelTraining(self.model, self.vocab, options, self.device, context.seed, self.name)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse an unknown prompt version or goal."""
        super().check_run(run)
        helpful_question(run.options, run.lm.prompts, run.task, cls.name)  # type: ignore[arg-type]

    # the same keys and counted messages as retrieval (classmethods: ``cls`` is this class)
    needed_keys = OniRetrieval.__dict__["needed_keys"]
    wrap_env = OniRetrieval.__dict__["wrap_env"]

    @property
    def schedule(self) -> TrainingSchedule:
        """The classifier's training schedule."""
        return self.training.schedule

    @property
    def trainer(self) -> BackgroundTrainer | None:
        """The classifier's training thread, None where it trains in the learner's loop."""
        return self.training.trainer

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """1[p_helpful(m) > threshold] / N_ep(m)^beta per step; 0 before the classifier's first step."""
        started = time.perf_counter()
        captions = read_captions(self.name, self.vocab, batch)
        values = (self.model.values(captions.distinct, self.vocab) if self.model.trained
                  else np.zeros(len(captions.distinct), dtype=np.float32))
        r_int = count_divided(values[captions.inverse], captions, self.options.beta)
        self.table.ensure(len(self.vocab))
        labelled = (self.table.get(captions.distinct) >= 0)[captions.inverse] & captions.valid
        self.carry(batch, captions)
        self.counters.rewarded(captions, labelled, r_int, started)
        return as_reward_tensor(r_int, captions, batch)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """Merge the labels that arrived, ask for the batch's unlabelled captions, train on the schedule."""
        started = time.perf_counter()
        merge_labels_and_ask(self, batch)
        self.training.run_due()
        self.counters.updated(started)
        return {}

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Store each label in the table; a readable 0/1 label is a training example of the classifier."""
        for caption_id, label in self.table.store(self.vocab, labelled):
            if label in (0, 1) and self.model.add(caption_id, int(label)):
                self.training.new_labels()

    def metrics(self) -> dict[str, float]:
        """ONI's shared figures plus the classifier's loss, accuracy, steps and examples."""
        return {**shared_metrics(self.labeler, self.vocab, self.counters), **self.training.metrics()}

    def state_dict(self) -> dict[str, Any]:
        """ONI's shared state plus classifier, optimiser, schedule and both random streams (training paused)."""
        return {**shared_state(self.name, self.vocab, self.labeler), **self.training.state(self.rng)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the shared state (rebuilding the training set from the labels), then classifier, schedule
        and random streams; an empty state changes nothing."""
        if load_shared_state(self.name, self.vocab, self.labeler, state, self.receive):
            self.training.load_state(state, self.rng)

    def state_summary(self) -> dict[str, Any]:
        """ONI's shared summary plus the classifier's steps and training examples."""
        return {**shared_summary(self.vocab, self.labeler), "model_steps": self.model.version,
                "examples": len(self.model)}

    def close(self) -> None:
        """Stop training between two steps, then the service."""
        self.training.close()  # no step half-way through when the labeler and the run end
        self.labeler.close()


@register_method
class OniRanking(IntrinsicReward):
    name = "oni-ranking"
    display_name = "ONI (ranking)"
    description = ("ONI-Ranking: LM preferences over random pairs of experienced messages train a Motif-style "
                   "reward model online; normalised, thresholded reward / count^beta")
    required_keys = ("message",)
    default_int_coef = 0.4
    uses_lm = True
    Options = RankingOptions

    def __init__(self, options: RankingOptions, context: MethodContext, obs_space: gym.spaces.Dict):
        from llmexplore.methods.common import RunningMeanStd
        from llmexplore.methods.oni.captions import CaptionVocabulary
        from llmexplore.methods.oni.model_training import ModelTraining
        from llmexplore.methods.oni.ranking import CaptionReservoir, RankingModel

        super().__init__(options, context, obs_space)
        self.vocab = CaptionVocabulary()
        self.rng = np.random.default_rng(context.seed)
        self.labeler = labeler_for(self.preference_question(options, context.lm.prompts, context.task), options,
                                   context)
        self.counters = RewardCounters()
        self.model = seeded_model(lambda: RankingModel(
            lr=options.lr, batch_size=options.batch_size, grad_clip=options.grad_clip, device=self.device),
            context.seed)
        self.training = ModelTraining(self.model, self.vocab, options, self.device, context.seed, self.name)
        self.reservoir = CaptionReservoir(options.reservoir_size)
        #: running mean and std of r(m) over earlier batches' steps
        self.stats = RunningMeanStd(())

    @classmethod
    def preference_question(cls, options: RankingOptions, prompts: str | None, task: TaskSpec) -> Question:
        """Motif's preference question for ``goal`` in the chosen prompt version, in the words of the task's
        family; ConfigError for an unknown goal or version."""
        asked = message_text.question_class(MotifPreference, task, cls.name)
        return asked(goal=options.goal, version=options.prompt_version, prompts=prompts)

    @classmethod
    def check_run(cls, run: CheckContext) -> None:
        """Also refuse an unknown prompt version or goal."""
        super().check_run(run)
        cls.preference_question(run.options, run.lm.prompts, run.task)  # type: ignore[arg-type]

    needed_keys = OniRetrieval.__dict__["needed_keys"]  # the same keys and counted messages as retrieval
    wrap_env = OniRetrieval.__dict__["wrap_env"]

    schedule = OniClassificationMethod.schedule
    trainer = OniClassificationMethod.trainer

    @no_grad
    def reward(self, batch: RewardBatch) -> torch.Tensor:
        """z = (r(m) - mean) / std with earlier batches' statistics, kept above ``threshold``, over
        N_ep(m)^beta; 0 until the trained model's values have entered the statistics."""
        started = time.perf_counter()
        captions = read_captions(self.name, self.vocab, batch)
        values = (self.model.values(captions.distinct, self.vocab) if self.model.trained
                  else np.zeros(len(captions.distinct), dtype=np.float32))
        r_int = count_divided(self.thresholded_z(values[captions.inverse]), captions, self.options.beta)
        in_pairs = np.fromiter((int(i) in self.model.in_pairs for i in captions.distinct), dtype=bool,
                               count=len(captions.distinct))
        self.carry(batch, (captions, values))
        self.counters.rewarded(captions, in_pairs[captions.inverse] & captions.valid, r_int, started)
        return as_reward_tensor(r_int, captions, batch)

    def thresholded_z(self, values: np.ndarray) -> np.ndarray:
        """z of each step's r(m) with the statistics so far where above ``threshold``, else 0 (float32); all 0
        before the statistics have taken in the trained model's values."""
        if not self.model.trained or float(self.stats.count) < 1:
            return np.zeros_like(values)
        z = (values.astype(np.float64) - float(self.stats.mean)) / float(self.stats.std)
        return np.where(z > self.options.threshold, z, 0.0).astype(np.float32)

    def update(self, batch: RewardBatch) -> dict[str, float]:
        """Merge the labelled pairs, fold the batch into the statistics and the reservoir, ask for random
        pairs while the LM queue is short, train on the schedule."""
        started = time.perf_counter()
        captions, values = self.carried(batch) or self._captions_and_values(batch)
        self.receive(self.labeler.poll())
        if self.model.trained:
            import torch

            self.stats.update(torch.from_numpy(values[captions.inverse][captions.valid]))
        self.reservoir.add(captions.distinct[captions.inverse][:: self.options.subsample], self.rng)
        pairs: list[tuple[str, str]] = []
        if self.labeler.stats()["queue_length"] < 2 * self.options.lm_batch_size:
            texts = self.vocab.captions
            pairs = [(texts[a], texts[b]) for a, b in self.reservoir.sample_pairs(self.options.pairs_per_batch,
                                                                                    self.rng)]
        self.labeler.submit(pairs)
        self.training.run_due()
        self.counters.updated(started)
        return {}

    def _captions_and_values(self, batch: RewardBatch) -> tuple[CaptionBatch, np.ndarray]:
        """What ``reward`` carries, for a batch it did not see."""
        captions = read_captions(self.name, self.vocab, batch)
        values = (self.model.values(captions.distinct, self.vocab) if self.model.trained
                  else np.zeros(len(captions.distinct), dtype=np.float32))
        return captions, values

    def receive(self, labelled: Iterable[tuple[Any, Any]]) -> None:
        """Add labelled caption pairs to the model's training set (unreadable ones are refused)."""
        added = False
        for (first, second), label in labelled:
            added |= self.model.add(self.vocab.id_of(first), self.vocab.id_of(second), int(label))
        if added:
            self.training.new_labels()

    def metrics(self) -> dict[str, float]:
        """ONI's shared figures, the model's training figures, the reservoir size and the reward statistics."""
        return {**shared_metrics(self.labeler, self.vocab, self.counters), **self.training.metrics(),
                "oni_reservoir_size": float(self.reservoir.size), "oni_reward_mean": float(self.stats.mean),
                "oni_reward_std": float(self.stats.std)}

    def state_dict(self) -> dict[str, Any]:
        """ONI's shared state, model, schedule and random streams (training paused), the caption reservoir
        and the reward statistics."""
        return {**shared_state(self.name, self.vocab, self.labeler), **self.training.state(self.rng),
                "reservoir": self.reservoir.state_dict(),
                "reward_stats": {k: v.clone() for k, v in self.stats.state_dict().items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore all that ``state_dict`` saved, rebuilding the pair training set from the label table; an
        empty state changes nothing."""
        if load_shared_state(self.name, self.vocab, self.labeler, state, self.receive):
            self.training.load_state(state, self.rng)
            self.reservoir.load_state_dict(state["reservoir"])
            self.stats.load_state_dict(state["reward_stats"])

    def state_summary(self) -> dict[str, Any]:
        """ONI's shared summary plus model steps, labelled pairs, reservoir size and captions offered, and a
        digest of the reservoir's captions."""
        texts = self.vocab.captions
        return {**shared_summary(self.vocab, self.labeler), "model_steps": self.model.version,
                "pairs": len(self.model), "reservoir": self.reservoir.size, "reservoir_seen": self.reservoir.seen,
                "reservoir_sha256": caption_sequence_digest(texts[i] for i in self.reservoir.ids[: self.reservoir.size])}

    def close(self) -> None:
        """Stop training between two steps, then the service."""
        self.training.close()
        self.labeler.close()
