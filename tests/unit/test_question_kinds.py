"""Each method owns its LM questions: they live in its folder and register with the LM layer when the method is
imported, and the oracle answers every one of them from the prompt text alone, with no method loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from llmexplore.lm.oracle import UNRECOGNISED
from llmexplore.lm.questions import QUESTION_KINDS, Question
from llmexplore.methods import list_methods
from llmexplore.methods.ellm.questions import EllmGoals, HousekeepPlacement
from llmexplore.methods.maestro.questions import CodeRequest, MaestroCode
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from tests.conftest import REPO

OWNERS = {"motif_preference": "motif", "oni_classification": "oni", "ellm_goals": "ellm",
          "housekeep_placement": "ellm", "maestro_code": "maestro",
          # Motif's and ONI's questions in Crafter's words (its family's message_text names the kinds)
          "crafter_preference": "motif", "crafter_helpfulness": "oni"}


def _run(code: str, stdin: str = "") -> str:
    result = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_each_built_in_kind_is_registered_from_its_method_s_folder():
    list_methods()
    owners = {kind: cls.__module__ for kind, cls in QUESTION_KINDS.items() if kind in OWNERS}
    assert owners == {kind: f"llmexplore.methods.{method}.questions" for kind, method in OWNERS.items()}


def test_the_lm_layer_alone_registers_no_kind_and_loading_the_methods_registers_them():
    out = _run("import sys\nfrom llmexplore.lm.questions import QUESTION_KINDS\nbefore = sorted(QUESTION_KINDS)\n"
               "from llmexplore.methods import list_methods\nlist_methods()\n"
               "print(before, sorted(QUESTION_KINDS))")
    assert out.strip() == f"[] {sorted(OWNERS)}"


def test_the_oracle_answers_every_method_s_question_without_importing_a_method():
    """Behind ``llmexplore lm serve`` only the prompt text arrives: the oracle reads it with the templates."""
    items: list[tuple[Question, object]] = [
        (MotifPreference("combat"), ("You kill the newt!", "You see here 5 gold pieces.")),
        (OniClassification(), "You kill the newt!"),
        (EllmGoals(), "You see grass, tree and water."),
        (HousekeepPlacement(), ("cushion", "sofa", "living room")),
        (MaestroCode(), CodeRequest("skill", "descender", "go down the stairs", "initiation(obs)", "return a bool")),
    ]
    prompts = [question.prompt(item) for question, item in items]
    code = ("import json, sys\nfrom llmexplore.lm.oracle import OracleLM\n"
            "replies = [OracleLM().answer(p) for p in json.load(sys.stdin)]\n"
            "print(json.dumps({'replies': replies, 'methods': sorted(m for m in sys.modules "
            "if m.startswith('llmexplore.methods'))}))")
    out = json.loads(_run(code, json.dumps(prompts)))
    # MaestroMotif's reference answers live beside it: their modules (and packages) load, no method does
    assert set(out["methods"]) <= {"llmexplore.methods", "llmexplore.methods.maestro",
                                   "llmexplore.methods.maestro.oracle", "llmexplore.methods.maestro.oracle_answer"}
    for (question, _), prompt, reply in zip(items, prompts, out["replies"]):
        assert reply != UNRECOGNISED
        assert question.parse(reply, prompt).ok, f"{question.kind}: {reply[:300]}"
