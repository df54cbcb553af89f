"""The annotation service: dedup, bounded queue, oldest first, non-blocking polls, checkpoints."""

from __future__ import annotations

import threading
import time

import pytest

from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.service import AnnotationService
from tests.helpers.pairs import MESSAGES


class GatedOracle(OracleLM):
    """An oracle that records what it is asked and can be held back."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def generate(self, prompts, params):
        self.gate.wait(30)
        self.batches.append(list(prompts))
        return super().generate(prompts, params)


def captions(n: int) -> list[str]:
    return [f"{MESSAGES[i % len(MESSAGES)]} ({i})" for i in range(n)]


def make(batch_size=4, max_pending=1000, **kw):
    backend = GatedOracle(**kw)
    lm = CachedLM(backend, LMCache())
    return backend, lm, AnnotationService(lm, OniClassification(), batch_size=batch_size, max_pending=max_pending)


def test_labels_arrive_oldest_first_and_match_a_direct_ask():
    backend, lm, service = make(batch_size=4)
    items = captions(30)
    with service:
        service.submit(items)
        assert service.wait_idle(30)
        got = service.poll()
    assert [i for i, _ in got] == items
    assert [lab for _, lab in got] == ask(OracleLM(), OniClassification(), items, SamplingParams()).labels
    assert all(len(b) <= 4 for b in backend.batches)
    assert service.poll() == []  # each label is handed out once


def test_known_or_pending_items_are_never_queued_again():
    backend, lm, service = make(batch_size=8)
    backend.gate.clear()  # hold the model: the first batch stays in flight
    service.start()
    items = captions(20)
    first = service.submit(items)
    again = service.submit(items[:10] + items[:10])
    assert (first.queued, again.queued, again.deduplicated) == (20, 0, 20)
    backend.gate.set()
    assert service.wait_idle(30)
    later = service.submit(items)
    service.close()
    assert later.deduplicated == 20 and later.queued == 0
    assert lm.backend_prompts == 20
    stats = service.stats()
    assert stats["dedup_saved"] == 40 and stats["labelled"] == 20 and stats["queue_length"] == 0


def test_queue_is_bounded_and_refused_items_can_come_back():
    backend, lm, service = make(batch_size=5, max_pending=6)
    items = captions(10)
    result = service.submit(items)  # not started yet: nothing drains the queue
    assert (result.queued, result.dropped) == (6, 4) and service.pending() == 6
    with service:
        assert service.wait_idle(30)
        assert service.submit(items).queued == 4
        assert service.wait_idle(30)
    assert len(service.labels()) == 10 and service.stats()["dropped"] == 4


def test_poll_does_not_block_while_the_model_is_busy():
    backend, lm, service = make(batch_size=2)
    backend.gate.clear()
    with service:
        service.submit(captions(6))
        t0 = time.perf_counter()
        assert service.poll() == []
        assert service.stats()["queue_length"] == 6
        assert time.perf_counter() - t0 < 0.5
        backend.gate.set()
        assert service.wait_idle(30)


def test_state_round_trip_loses_nothing():
    backend, lm, service = make(batch_size=3)
    items = captions(12)
    with service:
        service.submit(items[:6])
        assert service.wait_idle(30)
    service.submit(items[6:])  # the worker is stopped: these stay pending
    state = service.state_dict()
    assert len(state["labels"]) == 6 and state["pending"] == items[6:]
    import json

    state = json.loads(json.dumps(state))  # plain data, as a checkpoint stores it
    backend2, lm2, resumed = make(batch_size=3)
    resumed.load_state_dict(state)
    assert resumed.submit(items).deduplicated == 12
    with resumed:
        assert resumed.wait_idle(30)
    assert resumed.labels() == {**service.labels(), **{i: resumed.label(i) for i in items[6:]}}
    assert lm2.backend_prompts == 6  # only the pending ones were asked


@pytest.mark.parametrize("saved, asked", [
    (OniClassification(), OniClassification(goal="combat")),
    (MotifPreference(), MotifPreference(version="reworded")),
    (MotifPreference(), MotifPreference("gold")),
    (OniClassification(), MotifPreference()),
])
def test_a_state_of_another_question_is_refused_naming_both_and_the_fix(saved, asked):
    """Labels answer one question (kind, prompt version, goal): a resume asking another must not reuse them."""
    from llmexplore.errors import DataError

    service = AnnotationService(CachedLM(GatedOracle(), LMCache()), saved)
    service.submit([("a", "b")] if isinstance(saved, MotifPreference) else ["a"])
    state = service.state_dict()
    resumed = AnnotationService(CachedLM(GatedOracle(), LMCache()), asked)
    with pytest.raises(DataError) as err:
        resumed.load_state_dict(state)
    text = f"{err.value} {err.value.hint}"
    assert saved.describe() in text and asked.describe() in text
    assert "new run folder" in text and "goal and prompt version" in text
    assert resumed.pending() == 0 and resumed.labels() == {}  # nothing was loaded


def test_older_states_without_the_question_settings_load_as_before():
    backend, lm, service = make()
    service.submit(captions(3))
    state = service.state_dict()
    for older in ({k: v for k, v in state.items() if k != "kind"}, {**state, "kind": "oni_classification/default"}):
        resumed = AnnotationService(CachedLM(GatedOracle(), LMCache()), OniClassification())
        resumed.load_state_dict(older)
        assert resumed.pending() == 3


def test_pairs_for_ranking_and_failures_are_counted():
    backend = GatedOracle()
    lm = CachedLM(backend, LMCache())
    question = MotifPreference("combat")
    pairs = [("You kill the newt!", "12 gold pieces."), ("a", "a"), ("You kill the newt!", "12 gold pieces.")]
    with AnnotationService(lm, question, batch_size=100) as service:
        assert service.submit(pairs).queued == 2
        assert service.wait_idle(30)
        assert dict(service.poll()) == {pairs[0]: 0, pairs[1]: 2}
    state = service.state_dict()
    assert state["labels"][0][0] == list(pairs[0])


def test_backend_errors_keep_items_pending_until_it_recovers():
    class Flaky(OracleLM):
        fail = True

        def generate(self, prompts, params):
            if Flaky.fail:
                from llmexplore.lm.errors import LMUnavailableError

                raise LMUnavailableError("server down")
            return super().generate(prompts, params)

    service = AnnotationService(CachedLM(Flaky(), LMCache()), OniClassification(), batch_size=5, retry_wait_s=0.01,
                                max_retry_wait_s=0.05)
    with service:
        service.submit(captions(12))
        time.sleep(0.3)
        stats = service.stats()
        assert stats["backend_errors"] >= 2 and stats["queue_length"] == 12 and "server down" in stats["last_error"]
        Flaky.fail = False
        assert service.wait_idle(30)
    assert len(service.poll()) == 12 and service.stats()["last_error"] is None


def test_bad_settings():
    with pytest.raises(Exception, match="at least 1"):
        AnnotationService(CachedLM(OracleLM(), LMCache()), OniClassification(), batch_size=0)
