"""Answer scoring in ``questions.ask``: the best calibrated option is the label, cached, and ONI's lazy model keeps the mode."""

from __future__ import annotations

from typing import Sequence

from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.lm.questions import ask
from llmexplore.methods.ellm.questions import EllmGoals
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.methods.oni.labeler import LazyLM


class Scorer(LanguageModel):
    """Scores options by a table keyed on a word of the prompt; a fixed bias toward the first option."""

    name = "scorer"
    supports_scoring = True

    def __init__(self, table: dict[str, list[float]], bias: list[float]):
        self.table, self.bias, self.asked = table, bias, []

    @property
    def model_id(self) -> str:
        return "scorer"

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        self.generated = len(prompts)
        return [Completion("- chop tree") for _ in prompts]

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        self.asked.extend(prompts)
        out = []
        for p in prompts:
            word = next((w for w in self.table if w in p), None)
            base = self.table[word] if word else [0.0] * len(options)
            out.append([b + s for b, s in zip(self.bias, base)])
        return out


def test_scoring_labels_by_calibrated_option_scores_and_caches_them():
    scorer = Scorer({"qqone": [2.0, 0.0, 0.0], "qqtwo": [0.0, 2.0, 0.0], "qqtie": [0.0, 0.0, 2.0]},
                    bias=[5.0, 0.0, 0.0])
    lm = CachedLM(scorer, LMCache(":memory:"))
    lm.answer = "score"
    pairs = [("You kill the qqone!", "x"), ("x", "You see qqtwo."), ("qqtie", "It's dark."), ("a", "a")]
    result = ask(lm, MotifPreference(), pairs, SamplingParams())
    assert result.labels == [LABEL_FIRST, LABEL_SECOND, LABEL_TIE, LABEL_TIE]  # bias removed; identical: tie
    assert result.unknown == 0 and result.shortcuts == 1 and len(scorer.asked) == 4  # 3 pairs + calibration
    lm.calibrate = False
    assert ask(lm, MotifPreference(), pairs[1:3], SamplingParams()).labels == [LABEL_FIRST, LABEL_FIRST]
    asked = len(scorer.asked)
    lm.calibrate = True
    assert ask(lm, MotifPreference(), pairs, SamplingParams()).labels == result.labels
    assert len(scorer.asked) == asked, "asked again: scores come from the cache"


def test_questions_without_a_closed_answer_set_are_still_generated():
    scorer = Scorer({}, [0.0, 0.0])
    lm = CachedLM(scorer, LMCache(":memory:"))
    lm.answer = "score"
    assert ask(lm, OniClassification(), ["You kill the newt!"], SamplingParams()).labels in ([0], [1])
    assert not hasattr(scorer, "generated")
    assert ask(lm, EllmGoals(), ["You see a tree."], SamplingParams()).labels == [["chop tree"]]
    assert scorer.generated == 1


def test_onis_lazy_model_carries_the_answer_mode():
    lazy = LazyLM(LMConfig(answer="score", calibrate=False), cache_dir=None)
    assert lazy.answer == "score" and lazy.calibrate is False
