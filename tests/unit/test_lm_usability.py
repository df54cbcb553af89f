"""LM usability: comma-separated --lm, the flags `lm serve` prints, an early warning when generation labels
nothing, and progress while a run waits for its last labels."""

from __future__ import annotations

import argparse
import re
import shlex
import threading
from pathlib import Path

import pytest

from llmexplore.option_input import parse_option_pairs, split_option_pairs
from llmexplore.lm.base import Completion
from llmexplore.lm.config import LMConfig
from llmexplore.lm.arguments import add_lm_arguments, lm_config_from_args
from llmexplore.lm.cli import client_flags
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import UNKNOWN_CHECK_AFTER, UnknownAnswerWatch
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.lm.service import AnnotationService
from llmexplore.methods.oni import labeler as labeler_module
from llmexplore.methods.oni.labeler import OnlineLabeler
from tests.unit.test_lm_service import captions

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _lm_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_lm_arguments(parser)
    return parser.parse_args(argv)


def test_lm_pairs_may_be_comma_separated_or_repeated():
    assert split_option_pairs(["backend=openai,endpoint=completion", "answer=score"]) == [
        "backend=openai", "endpoint=completion", "answer=score"]
    # a comma inside a value stays: no key= follows it
    assert parse_option_pairs(["stop=[a,b],timeout_s=30", "goal_text=eat, then rest"]) == {
        "stop": ["a", "b"], "timeout_s": 30, "goal_text": "eat, then rest"}
    config = lm_config_from_args(_lm_args("--lm", "backend=openai,endpoint=completion,answer=score,base_url=http://h:1/v1"))
    assert (config.backend, config.endpoint, config.answer, config.base_url) == (
        "openai", "completion", "score", "http://h:1/v1")


def test_every_lm_flag_docs_lm_shows_is_accepted():
    shown = set(re.findall(r"--lm ([\w.=:/,-]+)", (DOCS / "LM.md").read_text()))
    assert "backend=openai,endpoint=completion,answer=score" in shown
    for flags in shown:
        lm_config_from_args(_lm_args("--lm", flags))  # raises ConfigError when a setting is rejected


@pytest.mark.parametrize("can_score", [True, False])
def test_lm_serve_prints_the_flags_a_run_needs(can_score):
    line = client_flags("0.0.0.0", 8123, "gemma-3-270m", can_score)
    argv = shlex.split(line)
    config = lm_config_from_args(_lm_args(*argv))
    assert (config.backend, config.base_url, config.model) == ("openai", "http://127.0.0.1:8123/v1", "gemma-3-270m")
    assert config.answer == ("score" if can_score else "generate")
    assert config.endpoint == ("completion" if can_score else "chat")


class Babbling(OracleLM):
    """A base model asked to generate: it continues the text instead of answering."""

    def generate(self, prompts, params):
        return [Completion("and then the story goes on and on") for _ in prompts]


def test_generation_that_labels_nothing_is_reported_after_the_first_50_questions():
    notes: list[str] = []
    watch = UnknownAnswerWatch(OniClassification(), notify=notes.append)
    service = AnnotationService(Babbling(), OniClassification(), batch_size=10)
    service.unknown_watch = watch
    with service:
        service.submit(captions(UNKNOWN_CHECK_AFTER - 10))
        assert service.wait_idle(30) and not notes  # 40 questions: too early to tell
        service.submit(captions(UNKNOWN_CHECK_AFTER + 30)[UNKNOWN_CHECK_AFTER - 10:])
        assert service.wait_idle(30)
    assert len(notes) == 1  # once, as soon as 50 were asked
    assert f"{UNKNOWN_CHECK_AFTER} of the first {UNKNOWN_CHECK_AFTER}" in notes[0] and "--answer score" in notes[0]
    # a model that answers is never reported
    quiet: list[str] = []
    good = UnknownAnswerWatch(MotifPreference("combat"), notify=quiet.append)
    service = AnnotationService(OracleLM(), MotifPreference("combat"), batch_size=25)
    service.unknown_watch = good
    with service:
        service.submit([(f"You kill the newt! ({i})", "12 gold pieces.") for i in range(80)])
        assert service.wait_idle(30)
    assert good.questions >= UNKNOWN_CHECK_AFTER and not quiet


def test_a_run_waiting_for_its_last_labels_says_so(monkeypatch, capsys):
    gate = threading.Event()

    class Slow(OracleLM):
        def generate(self, prompts, params):
            gate.wait(5)
            return super().generate(prompts, params)

    monkeypatch.setattr(labeler_module, "PROGRESS_EVERY_S", 0.2)
    labeler = OnlineLabeler(OniClassification(), LMConfig(backend="oracle"), cache_dir=None, batch_size=5,
                            close_wait_s=0.8)
    labeler.lm._lm = Slow()  # the lazily built model, held back
    labeler.submit(captions(12))
    labeler.close()
    gate.set()
    err = capsys.readouterr().err
    waits = re.findall(r"waiting for (\d+) outstanding LM labels", err)
    assert len(waits) >= 2 and int(waits[0]) == 12, err
    assert "close_wait_s" in err
