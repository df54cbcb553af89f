"""An annotation service for online methods (ONI): the learner hands over captions, labels come back later.

The learner calls ``submit`` with captions (or caption pairs for ranking) and ``poll``
for labels that arrived since the last poll; neither blocks on the model. A background
thread takes the oldest pending items in batches (published: 100 prompts), asks the model
through ``questions.ask`` and records the labels.

Why it is shaped this way (upstream defects fixed): an item already labelled or pending
is never queued again; the queue is bounded (items submitted while it is full are
refused, counted, and may be submitted again later) and served oldest first; when the
LM server is down or restarting, the batch stays pending and is retried with backoff,
so nothing is lost; the label table and the pending items export to plain Python data
(``state_dict``) so a checkpoint can carry them and a resumed run loses nothing.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Hashable, Iterable

from llmexplore.lm.base import LanguageModel
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.questions import Question, UnknownAnswerWatch, ask

STATE_VERSION = 1


@dataclass
class SubmitResult:
    queued: int = 0
    #: already labelled or already pending: no new call needed
    deduplicated: int = 0
    #: refused because the queue was full
    dropped: int = 0


class AnnotationService:
    def __init__(self, lm: LanguageModel, question: Question, *, params: SamplingParams | None = None,
                 batch_size: int = 100, max_pending: int = 100_000, retry_wait_s: float = 0.5,
                 max_retry_wait_s: float = 30.0, rate_window_s: float = 60.0):
        if batch_size < 1 or max_pending < 1:
            from llmexplore.errors import ConfigError

            raise ConfigError("batch_size and max_pending must be at least 1")
        self.lm = lm
        self.question = question
        self.params = params or SamplingParams()
        self.batch_size = batch_size
        self.max_pending = max_pending
        self.retry_wait_s = retry_wait_s
        self.max_retry_wait_s = max_retry_wait_s
        self.rate_window_s = rate_window_s
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: OrderedDict[Hashable, Any] = OrderedDict()
        self._labels: dict[Hashable, Any] = {}
        self._new: deque[tuple[Any, Any]] = deque()
        #: warns once when nearly every generated answer is unknown (a base model asked to generate)
        self.unknown_watch = UnknownAnswerWatch(question)
        self._recent: deque[tuple[float, int]] = deque()
        self._busy = False
        self._stop = False
        self._thread: threading.Thread | None = None
        self.counters = {"submitted": 0, "queued": 0, "dedup_saved": 0, "dropped": 0, "labelled": 0,
                         "parse_failures": 0, "retried_prompts": 0, "prompts_sent": 0, "batches": 0,
                         "backend_errors": 0}
        self.last_error: str | None = None
        self._started_at = time.monotonic()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "AnnotationService":
        """Start the background thread that sends queued items to the LM (again after a stop)."""
        if self._thread is None or not self._thread.is_alive():
            self._stop = False
            self._thread = threading.Thread(target=self._run, name="annotation-service", daemon=True)
            self._thread.start()
        return self

    def close(self, timeout: float | None = 30.0) -> None:
        """Stop the worker after the batch in flight; pending items stay pending (and in ``state_dict``)."""
        with self._lock:
            self._stop = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> "AnnotationService":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- learner side ----------------------------------------------------------------------
    def submit(self, items: Iterable[Any]) -> SubmitResult:
        """Queue items not yet labelled or pending. Never blocks on the model."""
        result = SubmitResult()
        with self._lock:
            for item in items:
                self.counters["submitted"] += 1
                key = self.question.key(item)
                if key in self._labels or key in self._pending:
                    result.deduplicated += 1
                elif len(self._pending) >= self.max_pending:
                    result.dropped += 1
                else:
                    self._pending[key] = item
                    result.queued += 1
            self.counters["queued"] += result.queued
            self.counters["dedup_saved"] += result.deduplicated
            self.counters["dropped"] += result.dropped
            if result.queued:
                self._wake.notify_all()
        return result

    def poll(self) -> list[tuple[Any, Any]]:
        """(item, label) pairs labelled since the last poll, oldest first."""
        with self._lock:
            out = list(self._new)
            self._new.clear()
        return out

    def label(self, item: Any, default: Any = None) -> Any:
        """The LM's answer for an item once it has come back, else ``default``."""
        with self._lock:
            return self._labels.get(self.question.key(item), default)

    def labels(self) -> dict[Hashable, Any]:
        """A copy of the whole label table."""
        with self._lock:
            return dict(self._labels)

    def pending(self) -> int:
        """Items queued or in flight."""
        with self._lock:
            return len(self._pending)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until nothing is pending or in flight (for tests and the end of a run)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.wait(min(left, 0.1))
        return True

    def stats(self) -> dict[str, Any]:
        """Counters and the recent answer rate, for the run's metrics."""
        now = time.monotonic()
        with self._lock:
            while self._recent and now - self._recent[0][0] > self.rate_window_s:
                self._recent.popleft()
            recent = sum(n for _, n in self._recent)
            window = min(self.rate_window_s, now - self._started_at) or 1e-9
            return {**self.counters, "queue_length": len(self._pending), "labels_total": len(self._labels),
                    "labels_per_second": recent / window, "last_error": self.last_error}

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain data (lists, strings, numbers) for checkpoints: labels and pending items, in order."""
        with self._lock:
            return {"version": STATE_VERSION, "kind": self.question.describe(),
                    "labels": [[_plain(item), _plain(label)] for item, label in self._labels.items()],
                    "pending": [_plain(item) for item in self._pending.values()],
                    "counters": dict(self.counters)}

    def check_state(self, state: dict[str, Any]) -> None:
        """DataError unless ``load_state_dict`` can take ``state``: its version, and the question its labels
        answer (kind, prompt version and settings such as the goal; labels of another question would be
        reused as answers to this one). A state without the entry (older checkpoints) is taken as it is,
        and so is one naming only ``kind/version`` where the question now adds its settings: an older
        checkpoint that did not record them."""
        from llmexplore.errors import DataError

        if state.get("version") != STATE_VERSION:
            raise DataError(f"annotation-service state has version {state.get('version')}, expected {STATE_VERSION}")
        saved, current = state.get("kind"), self.question.describe()
        older = isinstance(saved, str) and " " not in saved and saved == current.split(" ", 1)[0]
        if saved is None or saved == current or older:
            return
        raise DataError(f"the checkpoint's LM labels answer the question {saved!r}, but this run asks "
                        f"{current!r}: its labels would be taken as answers to another question",
                        hint="resume with the goal and prompt version the run was started with, or start "
                             "a new run folder for the new question settings")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the answers (and the queue) a checkpoint saved; refuses another state version or labels of
        another question (``check_state``)."""
        self.check_state(state)
        with self._lock:
            self._labels = {self.question.key(_hashable(i)): lab for i, lab in state["labels"]}
            self._pending = OrderedDict()
            for raw in state["pending"]:
                item = _hashable(raw)
                key = self.question.key(item)
                if key not in self._labels:
                    self._pending[key] = item
            self.counters.update({k: int(v) for k, v in state.get("counters", {}).items() if k in self.counters})
            self._wake.notify_all()

    # -- worker ----------------------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        while True:
            with self._lock:
                while not self._pending and not self._stop:
                    self._wake.wait()
                if self._stop:
                    return
                batch = [item for _, item in zip(range(self.batch_size), self._pending.values())]
                self._busy = True
            try:
                result = ask(self.lm, self.question, batch, self.params)
            except Exception as exc:  # server down, restarting, or failing: keep the batch and try again
                failures += 1
                with self._lock:
                    self._busy = False
                    self.counters["backend_errors"] += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self._wake.notify_all()
                    self._wake.wait(min(self.max_retry_wait_s, self.retry_wait_s * 2 ** min(failures - 1, 10)))
                continue
            failures = 0
            self.unknown_watch.add(self.lm, len(batch), result)  # outside the lock: it may print
            now = time.monotonic()
            with self._lock:
                for item, label in zip(batch, result.labels):
                    key = self.question.key(item)
                    self._pending.pop(key, None)
                    self._labels[key] = label
                    self._new.append((item, label))
                self.counters["labelled"] += len(batch)
                self.counters["parse_failures"] += result.unknown
                self.counters["retried_prompts"] += result.retried
                self.counters["prompts_sent"] += result.asked
                self.counters["batches"] += 1
                self._recent.append((now, len(batch)))
                self.last_error = None
                self._busy = False
                self._wake.notify_all()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value

