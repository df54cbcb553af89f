"""ONI's link to the LM layer: an ``AnnotationService`` running in the learner process.

The published code ran the annotator in a separate process fed through an unbounded
queue, served the newest messages first, queued a message again whenever it reappeared
before its label came back, and parsed labels by searching the reply for fixed words
(counting an unparsable reply as "unhelpful"). The LM layer's service fixes all of that
(see ``llmexplore/lm/service.py``); this module only adapts it to a method:

* The model is built lazily, in the service's worker thread, on the first batch it has to
  answer (``LazyLM``). Evaluation and visualisation build the method from a checkpoint to
  score episodes and never ask anything, so they never connect to a server; a server that
  is down when the learner starts is retried like any other outage. Runs check the server
  before training starts (``llmexplore.lm.check``), so a wrong address still fails early.
* The worker thread starts on the first ``submit``; ``close`` waits (bounded) until what
  is pending is labelled, so the final checkpoint holds every label, then stops it.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Hashable, Iterable, Mapping, Sequence

from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.lm.questions import Question
from llmexplore.lm.service import AnnotationService, SubmitResult


class LazyLM(LanguageModel):
    """``make_lm(config)`` built on the first ``generate`` call (in the caller's thread)."""

    def __init__(self, config: LMConfig, cache_dir: str | Path | None):
        self.config = config
        self.cache_dir = cache_dir
        self._lm: LanguageModel | None = None
        self._lock = threading.Lock()
        self.name = f"lazy-{config.backend}"
        # how closed-answer questions are asked (``questions.ask`` reads these before the model exists)
        self.answer = config.answer
        self.calibrate = config.calibrate

    def _built(self) -> LanguageModel:
        with self._lock:
            if self._lm is None:
                from llmexplore.lm.backends import make_lm

                self._lm = make_lm(self.config, cache_dir=self.cache_dir)
            return self._lm

    @property
    def model_id(self) -> str:
        """The real model's id; asking builds the model (and connects to its server)."""
        return self._built().model_id

    def cache_settings(self) -> dict[str, Any]:
        """The real model's settings that change answers (building it, like ``model_id``)."""
        return self._built().cache_settings()

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """One completion per prompt from the real model, built on the first call."""
        return self._built().generate(prompts, params)

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """log P(option | prompt, lead) per prompt and option, from the real model (built on first use)."""
        return self._built().score(prompts, lead, options)

    def close(self) -> None:
        """Close the real model if it was built; a later call builds it again."""
        with self._lock:
            if self._lm is not None:
                self._lm.close()
                self._lm = None


#: while a run waits for its last labels, a line this often says how many are outstanding
PROGRESS_EVERY_S = 5.0


class OnlineLabeler:
    """Submit items, poll labels, report counters, save and restore the whole table."""

    def __init__(self, question: Question, config: LMConfig, *,
                 cache_dir: str | Path | None, batch_size: int = 100, max_pending: int = 100_000,
                 close_wait_s: float = 30.0):
        self.lm = LazyLM(config, cache_dir)
        # a learner wants labels soon: retry a failing server every few seconds, not every 30
        self.service = AnnotationService(self.lm, question, params=config.sampling(), batch_size=batch_size,
                                         max_pending=max_pending, retry_wait_s=0.5, max_retry_wait_s=5.0)
        self.close_wait_s = close_wait_s
        self._started = False
        self._closed = False

    def submit(self, items: Iterable[Any]) -> SubmitResult:
        """Queue the items neither labelled nor pending, starting the service's
        worker on the first call (not after ``close``); never waits for the LM."""
        if not self._started and not self._closed:
            self.service.start()
            self._started = True
        return self.service.submit(items)

    def poll(self) -> list[tuple[Any, Any]]:
        """(item, label) pairs labelled since the last poll, oldest first;
        an unreadable reply gives the question's ``unknown`` label."""
        return self.service.poll()

    def labels(self) -> dict[Hashable, Any]:
        """A copy of the whole label table, by the question's item key."""
        return self.service.labels()

    def stats(self) -> dict[str, Any]:
        """The service's counters, queue length, label total and recent label rate, for metrics."""
        return self.service.stats()

    def state_dict(self) -> dict[str, Any]:
        """Label table, pending items and counters as plain data, for checkpoints."""
        return self.service.state_dict()

    def check_state(self, state: Mapping[str, Any]) -> None:
        """DataError unless ``load_state_dict`` can take ``state`` (its version, and its labels answer the
        question this run asks)."""
        self.service.check_state(dict(state))

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the label table and the pending queue from a checkpoint (DataError for another state
        version or labels of another question); pending items are asked once the worker starts."""
        self.service.load_state_dict(dict(state))

    def _report_wait(self, left_s: float) -> None:
        stats = self.service.stats()
        print(f"llmexplore: waiting for {stats['queue_length']} outstanding LM labels before the final checkpoint "
              f"({stats['labels_total']} labelled so far; at most {max(left_s, 0.0):.0f} s more, set by the "
              "method option close_wait_s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Label what is pending (at most ``close_wait_s``, not while the server is failing), then stop."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            deadline = time.monotonic() + self.close_wait_s
            next_report = time.monotonic()  # say at once what the run waits for, then every PROGRESS_EVERY_S
            while time.monotonic() < deadline and self.service.stats()["last_error"] is None:
                if self.service.wait_idle(timeout=min(0.5, max(deadline - time.monotonic(), 0.0))):
                    break
                if time.monotonic() >= next_report:
                    self._report_wait(deadline - time.monotonic())
                    next_report = time.monotonic() + PROGRESS_EVERY_S
            self.service.close()
        self.lm.close()
