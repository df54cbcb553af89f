"""Parser defects an outside check found: retractions, ELLM goal lines, Housekeep unknowns, max_tokens."""

from __future__ import annotations

from typing import Sequence

import pytest

from llmexplore.envs.housekeep.placements import suggest
from llmexplore.envs.housekeep.text import PlacedObject, View
from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.lm.parsing import parse_bullets
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import EllmGoals, HousekeepPlacement
from llmexplore.methods.motif.questions import LABEL_UNKNOWN, MotifPreference
from llmexplore.methods.ellm.asking import PlacementAnswers

MOTIF = MotifPreference()


class Replies(LanguageModel):
    """Answers every prompt with the same reply and finish reason, counting prompts."""

    name = "replies"

    def __init__(self, text: str, finish: str = "stop"):
        self.text, self.finish, self.prompts = text, finish, 0

    @property
    def model_id(self) -> str:
        return "replies"

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        self.prompts += len(prompts)
        return [Completion(self.text, self.finish) for _ in prompts]


@pytest.mark.parametrize("reply", [
    "Preferred: 1\n... wait, message 2 is better.",
    "Preferred: 1\nActually, I think the second one shows more progress.",
    "Preferred: 2\nOn second thought, they are equal.",
    "Preferred: 1 ... wait, message 2 is better",
])
def test_a_retracted_answer_is_unknown(reply):
    assert not MOTIF.parse(reply).ok
    result = ask(Replies(reply), MOTIF, [("You kill the newt!", "It's solid stone.")], SamplingParams())
    assert result.labels == [LABEL_UNKNOWN] and result.unknown == 1


def test_an_answer_without_retraction_still_counts():
    assert MOTIF.parse("Message 1 is a kill, which waits for no one.\nPreferred: 1").value == 0


def test_ellm_goals_drop_negated_lines_and_keep_goals_with_reasons():
    reply = ("- the player has no wood\n- do not attack the zombie\n- Chop tree: wood is needed for a table\n"
             "- drink water (the player is thirsty)\n- collect sapling - it grows food\n- mine stone because ...")
    parsed = parse_bullets(reply)
    assert parsed.ok and parsed.value == ["chop tree", "drink water", "collect sapling", "mine stone"]


def test_a_goal_cut_off_by_the_token_limit_is_dropped():
    question = EllmGoals()
    cut = Replies("- chop tree\n- drink wa", finish="length")
    assert ask(cut, question, ["You see a tree."], SamplingParams()).labels == [["chop tree"]]
    whole = Replies("- chop tree\n- drink water", finish="stop")
    assert ask(whole, question, ["You see a tree."], SamplingParams()).labels == [["chop tree", "drink water"]]


def test_housekeep_unknown_stays_unknown_and_is_counted():
    lm = Replies("I am not sure.")
    answers = PlacementAnswers(lm, HousekeepPlacement(), SamplingParams())
    assert answers("mug", "sink", "kitchen") is None
    assert answers.failures == 1 and lm.prompts == 2  # asked, then asked again with the reminder
    assert answers("mug", "sink", "kitchen") is None
    assert answers.failures == 1 and lm.prompts == 2  # remembered as unknown, not asked again
    # an unknown answer suggests neither picking the object up nor placing it
    view = View("kitchen", "kitchen", ("sink",), 0, (PlacedObject("mug", "sink", 0),), None)
    assert suggest(view, answers) == []
    held = View("kitchen", "kitchen", ("sink",), 0, (), "mug")
    assert suggest(held, answers) == []


def test_max_tokens_defaults_to_motifs_published_4096():
    assert SamplingParams().max_tokens == 4096
    assert LMConfig().sampling().max_tokens == 4096
