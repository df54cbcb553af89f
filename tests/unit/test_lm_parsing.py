"""Strict parsing of messy model replies: never map garbage to a label."""

from __future__ import annotations

import pytest

from llmexplore.lm.parsing import parse_bullets, parse_code_block
from llmexplore.methods.ellm.questions import HousekeepPlacement
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, MotifPreference
from llmexplore.methods.oni.questions import OniClassification

MOTIF = MotifPreference()
PROMPT = MOTIF.prompt(("You kill the newt!", "It's solid stone."))


@pytest.mark.parametrize("reply, label", [
    ("The first is a kill.\nPreferred: 1", LABEL_FIRST),
    ("Reasoning...\n\nPreferred: 2\n", LABEL_SECOND),
    ("Both are dull.\nPreferred: none", LABEL_TIE),
    ("**Preferred: 2**", LABEL_SECOND),
    ("Analysis.\n**Preferred:** `1`.", LABEL_FIRST),
    ("- Preferred: (2)", LABEL_SECOND),
    ("preferred = 1", LABEL_FIRST),
    ('Preferred: "None".', LABEL_TIE),
    ("Preferred: Message 2", LABEL_SECOND),
    ("Preferred: 2\nPreferred: 2", LABEL_SECOND),  # repeated but consistent
    ("I must answer Preferred: 1, 2 or none.\nPreferred: 1, 2 or none\nPreferred: 1", LABEL_FIRST),  # echo then answer
    ("Sure!\n" + PROMPT + "\nThe kill matters more.\nPreferred: 1", LABEL_FIRST),  # whole prompt echoed
])
def test_motif_accepts_declared_answers(reply, label):
    parsed = MOTIF.parse(reply, PROMPT)
    assert parsed.ok and parsed.value == label


@pytest.mark.parametrize("reply, reason", [
    ("", "empty"),
    ("   \n ", "empty"),
    (None, "empty"),
    ("Message 1 is clearly better.", "no answer line"),
    ("I prefer 1.", "no answer line"),
    ("Preferred: 1\nOn second thought...\nPreferred: 2", "conflicting answers"),
    ("Preferred: 1 or 2", "invalid value"),
    ("Preferred: 3", "invalid value"),
    ("Preferred: <1|2|none>", "invalid value"),
    ("Préféré : 1", "no answer line"),  # another language
    ("首选：1", "no answer line"),
    ("1", "no answer line"),  # a bare number is not a declaration
    (PROMPT, "no answer line"),  # only the prompt echoed back
    ("Preferred:", "invalid value"),
])
def test_motif_rejects_garbage(reply, reason):
    parsed = MOTIF.parse(reply, PROMPT)
    assert not parsed.ok and parsed.reason == reason and parsed.value is None


def test_classification_does_not_read_unhelpful_as_helpful():
    oni = OniClassification()
    assert oni.parse("Verdict: unhelpful").value == 0
    assert oni.parse("Verdict: not helpful").value == 0
    assert oni.parse("Verdict: helpful").value == 1
    assert not oni.parse("Verdict: helpful or unhelpful").ok
    assert not oni.parse("This is helpful.").ok
    assert not oni.parse("label A").ok


def test_yes_no():
    hk = HousekeepPlacement()
    assert hk.parse("A mug goes in a cabinet.\nAnswer: yes").value is True
    assert hk.parse("Answer: No.").value is False
    assert not hk.parse("Answer: maybe").ok
    assert not hk.parse("yes").ok


def test_bullets():
    assert parse_bullets("Goals:\n- chop tree\n* Drink water.\n1. place crafting table\n- chop tree").value == [
        "chop tree", "drink water", "place crafting table"]
    assert parse_bullets("Nothing to do.\n- none").value == []
    assert not parse_bullets("chop tree, drink water").ok
    assert not parse_bullets("").ok
    # prose bullets are not goals
    assert not parse_bullets("- The player should first look around carefully before doing anything").ok
    prompt = "Example:\n- chop tree\nObservation: x"
    assert not parse_bullets("- chop tree", prompt).ok  # only the prompt's example echoed


def test_code_block():
    assert parse_code_block("Here:\n```python\ndef f(x):\n    return x\n```\n").value == "def f(x):\n    return x"
    assert not parse_code_block("def f(x): return x").ok
    assert not parse_code_block("```python\na=1\n```\n```python\nb=2\n```").ok


@pytest.mark.parametrize("line, prompt", [
    ("Preferred: 1", "Preferred: 1\nrest"), ("Preferred: 1", "head\nPreferred: 1"),
    ("Preferred: 1", "Preferred: 1"),
    ("Preferred: 1", "a\nPreferred: 1\nb"), ("Preferred: 1", "written as Preferred: 1 or 2"),
    ("Preferred: 1", "xPreferred: 1\n"), ("Preferred: 1", "\nPreferred: 12"), ("Preferred: 1", ""),
])
def test_an_echoed_line_is_a_whole_line_of_the_prompt(line, prompt):
    from llmexplore.lm.parsing import _echoed

    assert _echoed(line, prompt) == (bool(prompt) and f"\n{line}\n" in f"\n{prompt}\n")
