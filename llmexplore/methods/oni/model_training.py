"""The reward model's training in ``oni-classification`` and ``oni-ranking``: on the published schedule, in
the learner's loop or on a thread of its own (``background.py``)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from llmexplore.methods.oni.background import BackgroundTrainer
from llmexplore.methods.oni.options import CPU_TRAIN_TIME_SHARE, OniModelOptions
from llmexplore.methods.oni.schedule import TrainingSchedule

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from llmexplore.methods.oni.captions import CaptionVocabulary
    from llmexplore.methods.oni.online_model import OnlineRewardModel


class ModelTraining:
    """One reward model, its schedule and its own random stream; ``run_due`` after each batch."""

    def __init__(self, model: OnlineRewardModel, vocab: CaptionVocabulary, options: OniModelOptions,
                 device: torch.device, seed: int, name: str):
        self.model = model
        self.vocab = vocab
        on_thread = options.train_thread if options.train_thread is not None else device.type != "cuda"
        share = options.train_time_share
        if share is None:
            share = 1.0 if on_thread or device.type == "cuda" else CPU_TRAIN_TIME_SHARE
        self.schedule = TrainingSchedule(burst_steps=options.burst_steps, burst_until=options.burst_until,
                                         steps_per_batch=options.steps_per_batch, time_share=share)
        #: the training steps' own random stream (the method's ``rng`` draws pairs and reservoir slots)
        self.train_rng = np.random.default_rng([seed, 1])
        self.trainer: BackgroundTrainer | None = None
        if on_thread:
            model.score_with_copies()
            self.trainer = BackgroundTrainer(self.schedule, self.step, model.publish, name=f"{name}-reward-model")

    def step(self) -> None:
        """One gradient step of the model on its labelled examples."""
        self.model.train_step(self.vocab, self.train_rng)

    def new_labels(self) -> None:
        """New examples arrived: a burst of steps is owed while they are fewer than ``burst_until``."""
        self.schedule.on_new_labels(len(self.model))

    def run_due(self) -> None:
        """After a batch: the steps the schedule owes now, here or on the training thread."""
        self.schedule.on_batch(len(self.model))
        if self.trainer is None:
            self.schedule.run(self.step)
        else:
            self.trainer.check()
            self.trainer.start()

    def paused(self) -> AbstractContextManager[Any]:
        """While held, no step runs, so the training state can be read or replaced whole."""
        return self.trainer.paused() if self.trainer is not None else nullcontext()

    def metrics(self) -> dict[str, float]:
        """The model's loss figures since the last row, steps done and owed, examples, seconds, scoring copy."""
        out = {f"oni_rm_{k}": v for k, v in self.model.take_stats().items()}
        out.update(oni_rm_steps=float(self.schedule.steps_done), oni_rm_pending_steps=float(self.schedule.pending),
                   oni_rm_examples=float(len(self.model)), oni_rm_train_seconds=float(self.schedule.seconds),
                   oni_rm_scoring_steps=float(self.model.scoring_version))
        return out

    def state(self, rng: np.random.Generator) -> dict[str, Any]:
        """Model, schedule, the method's ``rng`` and the training stream, read with training paused."""
        with self.paused():
            return {"model": self.model.state_dict(), "schedule": self.schedule.state_dict(),
                    "rng": rng.bit_generator.state, "train_rng": self.train_rng.bit_generator.state}

    def load_state(self, state: Mapping[str, Any], rng: np.random.Generator) -> None:
        """Restore what ``state`` saved (``rng`` is the method's), with training paused."""
        with self.paused():
            self.model.load_state_dict(state["model"])
            self.schedule.load_state_dict(state["schedule"])
            rng.bit_generator.state = state["rng"]
            if "train_rng" in state:
                self.train_rng.bit_generator.state = state["train_rng"]

    def close(self) -> None:
        """Stop the training thread between two steps."""
        if self.trainer is not None:
            self.trainer.close()
