"""ONI's parts on their own: the caption vocabulary, the training schedule, the reservoir,
the classifier and the ranking model training on hand-made labels."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from llmexplore.envs.nethack.text import encode_message
from llmexplore.methods.oni.captions import CaptionVocabulary
from llmexplore.methods.oni.classifier import ClassifierModel
from llmexplore.methods.oni.ranking import CaptionReservoir, RankingModel
from llmexplore.methods.oni.schedule import TrainingSchedule



@pytest.fixture(autouse=True)
def one_torch_thread():
    """Training uses one torch thread (see TrainConfig.torch_threads); so do these tests."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

# -- captions ---------------------------------------------------------------------------------------
def test_vocabulary_numbers_captions_in_order_of_first_sight_and_maps_every_step():
    vocab = CaptionVocabulary()
    texts = [["It's a wall.", "", "You kill the newt!"], ["", "It's a wall.", "It's a wall.   "]]
    messages = np.stack([[encode_message(t) for t in row] for row in texts])
    distinct, inverse = vocab.index(torch.from_numpy(messages))
    per_step = [vocab.captions[i] for i in distinct[inverse]]
    # trailing blanks are dropped by decoding, so the last step shares the wall's caption
    assert per_step == ["It's a wall.", "", "You kill the newt!", "", "It's a wall.", "It's a wall."]
    assert len(vocab) == 3 and len(distinct) == 3
    assert bytes(vocab.rows([vocab.id_of("You kill the newt!")])[0]).rstrip(b"\0") == b"You kill the newt!"
    again, _ = vocab.index(messages)  # a second batch reuses the ids
    assert sorted(again) == sorted(distinct) and len(vocab) == 3
    restored = CaptionVocabulary()
    restored.load_state_dict(vocab.state_dict())
    assert restored.captions == vocab.captions and (restored.rows(range(3)) == vocab.rows(range(3))).all()


def test_vocabulary_grows_past_its_first_allocation():
    vocab = CaptionVocabulary()
    ids = [vocab.id_of(f"message {i}") for i in range(300)]
    assert ids == list(range(300))
    assert bytes(vocab.rows([299])[0]).rstrip(b"\0") == b"message 299"


# -- schedule ---------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_published_schedule_bursts_while_few_labels_then_one_step_per_batch():
    schedule = TrainingSchedule(burst_steps=32, burst_until=100, steps_per_batch=1, time_share=1.0)
    steps = []
    schedule.on_batch(10)
    assert schedule.run(lambda: steps.append(1)) == 0  # no labels arrived: nothing to do
    schedule.on_new_labels(10)
    schedule.on_new_labels(12)  # arrivals before the burst ran merge into it
    assert schedule.pending == 32
    assert schedule.run(lambda: steps.append(1)) == 32 and schedule.pending == 0
    schedule.on_new_labels(100)  # from burst_until on, arrivals no longer trigger bursts
    assert schedule.pending == 0
    for _ in range(3):
        schedule.on_batch(100)
        assert schedule.run(lambda: steps.append(1)) == 1
    assert len(steps) == schedule.steps_done == 35


def test_time_share_spreads_owed_steps_without_dropping_them():
    clock = FakeClock()
    schedule = TrainingSchedule(burst_steps=4, burst_until=100, time_share=0.25, clock=clock)

    def step() -> None:
        clock.now += 1.0  # each gradient step takes one second

    schedule.on_new_labels(5)
    ran = []
    for _ in range(8):
        clock.now += 3.0  # three seconds of policy training between two calls
        ran.append(schedule.run(step))
    # a quarter of the wall time: one step every four seconds, until the four owed steps are done
    assert ran == [1, 1, 1, 1, 0, 0, 0, 0]
    assert schedule.seconds == pytest.approx(4.0)
    state = schedule.state_dict()
    again = TrainingSchedule()
    again.load_state_dict(state)
    assert again.steps_done == 4 and again.pending == 0


# -- reservoir --------------------------------------------------------------------------------------
def test_reservoir_keeps_a_uniform_sample_of_everything_offered():
    rng = np.random.default_rng(0)
    reservoir = CaptionReservoir(200)
    for start in range(0, 20_000, 1000):
        reservoir.add(np.arange(start, start + 1000), rng)
    assert reservoir.size == 200 and reservoir.seen == 20_000
    kept = reservoir.ids[: reservoir.size]
    # early and late items are equally likely to be kept: mean near 10,000, both halves present
    assert abs(kept.mean() - 10_000) < 1_200
    assert (kept < 10_000).sum() > 60 and (kept >= 10_000).sum() > 60
    pairs = reservoir.sample_pairs(50, rng)
    assert pairs.shape == (50, 2) and np.isin(pairs, kept).all()
    restored = CaptionReservoir(200)
    restored.load_state_dict(reservoir.state_dict())
    assert (restored.ids[: restored.size] == kept).all() and restored.seen == reservoir.seen


def test_an_empty_reservoir_gives_no_pairs():
    assert CaptionReservoir(10).sample_pairs(5, np.random.default_rng(0)).shape == (0, 2)


# -- models -----------------------------------------------------------------------------------------
HELPFUL = ["You kill the newt!", "You find a hidden passage.", "Welcome to experience level 2.", "$ - 12 gold pieces."]
UNHELPFUL = ["It's a wall.", "This door is closed.", "You hear some noises in the distance.", ""]


def test_classifier_learns_its_labels_and_thresholds_its_prediction():
    torch.manual_seed(0)
    vocab = CaptionVocabulary()
    model = ClassifierModel(lr=1e-3, batch_size=256)
    for text in HELPFUL + UNHELPFUL:
        assert model.add(vocab.id_of(text), 1 if text in HELPFUL else 0)
    assert not model.add(vocab.id_of(HELPFUL[0]), 0)  # a caption is labelled once
    assert not model.trained
    rng = np.random.default_rng(0)
    for _ in range(60):
        model.train_step(vocab, rng)
    ids = np.arange(len(vocab))
    assert model.trained and model.version == 60
    assert model.values(ids, vocab).tolist() == [1.0] * 4 + [0.0] * 4
    stats = model.take_stats()
    assert stats["loss"] < 0.69 and 0 <= stats["accuracy"] <= 1 and model.take_stats() == {}
    # the reward is 1[p(helpful) > threshold]: with the threshold at the median p, half the captions
    model.model.eval()
    with torch.no_grad():
        p = torch.softmax(model.model(torch.from_numpy(vocab.rows(ids))), -1)[:, 1].numpy()
    model.threshold = float(np.sort(p)[3])
    model.version += 1  # invalidate the cache as a training step would
    assert model.values(ids, vocab).tolist() == (p > model.threshold).astype(float).tolist()
    assert model.values(ids, vocab).sum() == 4


def test_ranking_model_learns_preferences_and_refuses_unknown_labels():
    torch.manual_seed(0)
    vocab = CaptionVocabulary()
    model = RankingModel(lr=1e-3, batch_size=256)
    good, bad = [vocab.id_of(t) for t in HELPFUL], [vocab.id_of(t) for t in UNHELPFUL]
    for g, b in zip(good, bad):
        assert model.add(g, b, 0) and model.add(b, g, 1)
    assert model.add(good[0], good[0], 2)
    assert not model.add(good[1], bad[1], 3)  # the LM's answer could not be read
    assert len(model) == 9 and set(good) | set(bad) == model.in_pairs
    rng = np.random.default_rng(0)
    for _ in range(80):
        model.train_step(vocab, rng)
    r = model.values(np.arange(len(vocab)), vocab)
    assert min(r[good]) > max(r[bad])
    assert model.take_stats()["accuracy"] > 0.5
