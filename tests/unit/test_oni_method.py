"""The ONI methods on hand-made batches: each reward rule, count division, masking at episode
ends, labels flowing through the real annotation service (embedded oracle), state round trips,
and the early refusals."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.nethack.text import encode_message
from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY, EpisodicMessageCount
from llmexplore.errors import ConfigError, DataError, UserError
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods.motif.questions import MotifPreference
from llmexplore.methods.oni.questions import OniClassification
from llmexplore.methods import CheckContext, MethodContext, RewardBatch, get_method, parse_options

NEWT, WALL, GOLD, EMPTY = "You kill the newt!", "It's a wall.", "You see here 3 gold pieces.", ""
MESSAGES = [[EMPTY, NEWT, NEWT, WALL], [WALL, GOLD, EMPTY, NEWT]]
COUNTS = [[1, 1, 2, 1], [1, 1, 1, 3]]
DONES = [[0, 1, 0], [0, 0, 0]]  # the second newt step ended an episode
ONI = ("oni-retrieval", "oni-classification", "oni-ranking")


def make_method(name: str, run_dir: Path, lm: dict | None = None, **options):
    cls = get_method(name)
    opts = parse_options(cls, options)
    context = MethodContext(task=get_task("nethack:score"), seed=0, run_dir=run_dir, lm=LMConfig(**(lm or {"cache": ":memory:"})))
    return cls(opts, context, None)


def make_batch(messages=MESSAGES, counts=COUNTS, dones=DONES) -> RewardBatch:
    msg = torch.from_numpy(np.stack([[encode_message(m) for m in row] for row in messages]))
    count = torch.tensor(counts, dtype=torch.float32)[..., None]
    d = torch.tensor(dones, dtype=torch.float32)
    return RewardBatch(obs={"message": msg, EPISODIC_MESSAGE_COUNT_KEY: count}, actions=torch.zeros_like(d), dones=d)


def expected(value_of, beta: float = 3.0) -> torch.Tensor:
    """The formula written out step by step: value(m_{t+1}) / N^beta, 0 where the transition ended an episode."""
    out = torch.zeros(2, 3)
    for i in range(2):
        for t in range(3):
            if not DONES[i][t]:
                out[i, t] = value_of(MESSAGES[i][t + 1]) / COUNTS[i][t + 1] ** beta
    return out


def wait_labels(method, total: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while method.labeler.stats()["labels_total"] < total and time.monotonic() < deadline:
        time.sleep(0.02)
    assert method.labeler.service.wait_idle(timeout)



@pytest.fixture(autouse=True)
def one_torch_thread():
    """Training uses one torch thread (see TrainConfig.torch_threads); so do these tests."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

# -- retrieval ----------------------------------------------------------------------------------------
def test_retrieval_reward_is_the_label_over_the_count_masked_at_episode_ends(tmp_path):
    method = make_method("oni-retrieval", tmp_path)
    batch = make_batch()
    assert torch.equal(method.reward(batch), torch.zeros(2, 3))  # nothing labelled yet
    assert method.metrics()["oni_labelled_share"] == 0
    method.receive([(NEWT, 1), (WALL, 0), (GOLD, None)])  # GOLD: the LM's answer could not be read
    reward = method.reward(batch)
    assert torch.allclose(reward, expected(lambda m: 1.0 if m == NEWT else 0.0))
    assert reward[0, 0] == 1
    assert reward[0, 1] == 0  # the newt again, but that transition ended the episode
    assert reward[1, 2] == pytest.approx(1 / 27, rel=1e-6)  # the newt seen for the third time
    metrics = method.metrics()
    # 5 unmasked steps: NEWT, WALL, GOLD, EMPTY, NEWT -> NEWT, WALL and NEWT are labelled
    assert metrics["oni_labelled_share"] == pytest.approx(3 / 5)
    assert metrics["oni_rewarded_share"] == pytest.approx(2 / 5)
    method.close()


def test_retrieval_asks_each_new_caption_once_and_rewards_the_oracles_labels(tmp_path):
    method = make_method("oni-retrieval", tmp_path, beta=1.0)
    batch = make_batch()
    method.reward(batch)
    method.update(batch)  # sends the four captions
    wait_labels(method, 4)
    method.reward(batch)
    method.update(batch)  # merges the labels; nothing left to ask
    truth = dict(zip([EMPTY, NEWT, WALL, GOLD], ask(OracleLM(), OniClassification(), [EMPTY, NEWT, WALL, GOLD],
                                                   SamplingParams()).labels))
    assert truth[NEWT] == 1 and truth[WALL] == 0
    assert torch.allclose(method.reward(batch), expected(lambda m: float(truth[m]), beta=1.0))
    stats = method.labeler.stats()
    assert stats["labels_total"] == stats["labelled"] == 4 and stats["queue_length"] == 0
    assert stats["prompts_sent"] == 4  # one call per distinct caption, none repeated
    method.close()


def test_a_caption_still_pending_is_not_asked_again(tmp_path):
    method = make_method("oni-retrieval", tmp_path)
    started = threading_event_blocking_the_model(method)
    batch = make_batch()
    method.reward(batch)
    method.update(batch)
    method.reward(batch)
    method.update(batch)  # the same four captions, still waiting for the model
    stats = method.labeler.stats()
    assert stats["queued"] == 4 and stats["dedup_saved"] == 4
    started.set()
    wait_labels(method, 4)
    assert method.labeler.stats()["prompts_sent"] == 4
    method.close()


def threading_event_blocking_the_model(method):
    """Hold the embedded model until the returned event is set (the real oracle answers afterwards)."""
    import threading

    gate = threading.Event()
    lm = method.labeler.lm
    original = lm.generate

    def held(prompts, params):
        gate.wait(30)
        return original(prompts, params)

    lm.generate = held
    return gate


# -- classification ----------------------------------------------------------------------------------------
def test_classification_reward_is_the_thresholded_prediction(tmp_path):
    method = make_method("oni-classification", tmp_path, train_thread=False, train_time_share=1.0, burst_steps=40,
                         lr=1e-3)
    batch = make_batch()
    method.receive([(NEWT, 1), (GOLD, 1), (WALL, 0), (EMPTY, 0), ("You hear some noises.", None)])
    assert len(method.model) == 4  # the unreadable label is not a training example
    assert torch.equal(method.reward(batch), torch.zeros(2, 3))  # untrained: no reward yet
    method.update(batch)  # the burst owed for the new labels runs now (no time limit)
    assert method.model.version == 40 and method.schedule.pending == 0
    method.model.model.eval()
    with torch.no_grad():
        p = {m: float(torch.softmax(method.model.model(torch.from_numpy(encode_message(m))[None]), -1)[0, 1])
             for m in (EMPTY, NEWT, WALL, GOLD)}
    assert p[NEWT] > 0.5 > p[WALL]  # it learned the labels
    assert torch.allclose(method.reward(batch), expected(lambda m: float(p[m] > 0.5)))
    metrics = method.metrics()
    assert metrics["oni_rm_steps"] == 40 and metrics["oni_rm_examples"] == 4 and "oni_rm_loss" in metrics
    method.close()


@pytest.mark.parametrize("name", ["oni-classification", "oni-ranking"])
def test_reward_model_trains_on_its_own_thread_and_the_learner_scores_a_published_copy(tmp_path, name):
    # every caption of the batch is labelled (classification) or no pairs are asked (ranking): no labels arrive later
    options = {"train_thread": True, "burst_steps": 25, "lr": 1e-3, **({"pairs_per_batch": 0} if name == "oni-ranking" else {})}
    method = make_method(name, tmp_path, **options)
    assert method.trainer is not None and method.schedule.unlimited  # the default share on a thread: no limit
    batch = make_batch()
    if name == "oni-classification":
        method.receive([(NEWT, 1), (GOLD, 1), (WALL, 0), (EMPTY, 0)])
    else:
        method.receive([((NEWT, WALL), 0), ((EMPTY, GOLD), 1), ((WALL, EMPTY), 2)])
    method.reward(batch)
    method.update(batch)  # starts the thread; the learner does not wait for the burst
    assert method.trainer.wait_idle(60)
    assert method.model.version == 25 and method.model.scoring_version == 25
    scorer, _ = method.model._scoring
    assert scorer is not method.model.model and not scorer.training
    for a, b in zip(scorer.state_dict().values(), method.model.model.state_dict().values()):
        assert torch.equal(a, b)  # the published copy holds the weights of the last step

    state = method.state_dict()  # taken between steps: training weights, optimizer and counters agree
    assert state["schedule"] == {"pending": 0, "steps_done": 25} and state["model"]["version"] == 25
    ids = np.array([method.vocab.id_of(m) for m in (EMPTY, NEWT, WALL, GOLD)])
    before = method.model.values(ids, method.vocab)
    method.close()
    assert method.trainer._thread is None  # joined

    resumed = make_method(name, tmp_path, **options)
    resumed.load_state_dict(state)
    assert resumed.model.scoring_version == 25
    np.testing.assert_allclose(resumed.model.values(ids, resumed.vocab), before, rtol=1e-5, atol=1e-6)
    resumed.close()


def test_no_step_runs_while_the_training_thread_is_paused_and_the_burst_goes_on_after(tmp_path):
    # full-size steps (256 captions, tenths of a second each) in a burst of 60: the pause is granted mid-burst
    method = make_method("oni-classification", tmp_path, train_thread=True, burst_steps=60)
    method.receive([(f"You see here {i} gold pieces.", i % 2) for i in range(300)])
    batch = make_batch()
    method.reward(batch)
    method.update(batch)
    while method.schedule.steps_done < 2:
        time.sleep(0.01)
    began = time.monotonic()
    with method.trainer.paused():
        waited = time.monotonic() - began
        done = method.schedule.steps_done
        time.sleep(0.3)
        assert method.schedule.steps_done == done  # no step inside
    owed = method.schedule.pending
    assert owed > 20, "the burst ended before the pause was granted"
    assert waited < 3
    while method.schedule.steps_done == done:  # training resumes once the pause ends
        time.sleep(0.01)
    method.close()


def test_an_error_on_the_training_thread_reaches_the_learner(tmp_path):
    method = make_method("oni-classification", tmp_path, train_thread=True, burst_steps=2)

    def broken(vocab, rng):
        raise ValueError("broken step")

    method.model.train_step = broken
    method.receive([(NEWT, 1)])
    batch = make_batch()
    method.reward(batch)
    method.update(batch)
    with pytest.raises(RuntimeError, match="broken step"):
        method.trainer.wait_idle(30)
    with pytest.raises(RuntimeError, match="training thread failed"):
        method.update(batch)
    method.close()


# -- ranking -----------------------------------------------------------------------------------------------
def test_ranking_reward_is_normalised_thresholded_divided_and_masked(tmp_path):
    # no pairs go to the LM here (pairs_per_batch 0): the model changes only where the test says so
    method = make_method("oni-ranking", tmp_path, train_thread=False, train_time_share=1.0, burst_steps=30, lr=1e-3,
                         threshold=-0.2, pairs_per_batch=0)
    batch = make_batch()
    method.receive([((NEWT, WALL), 0), ((EMPTY, GOLD), 1), ((WALL, EMPTY), 2), ((GOLD, NEWT), 3)])
    assert len(method.model) == 3
    assert torch.equal(method.reward(batch), torch.zeros(2, 3))
    method.update(batch)  # trains 30 steps; statistics start with the next batch
    assert method.model.version == 30
    assert torch.equal(method.reward(batch), torch.zeros(2, 3))  # no statistics of the trained model yet
    method.update(batch)
    assert method.model.version == 30
    ids = np.array([method.vocab.id_of(m) for m in (EMPTY, NEWT, WALL, GOLD)])
    raw = dict(zip((EMPTY, NEWT, WALL, GOLD), method.model.values(ids, method.vocab).astype(float)))
    # running statistics over the unmasked steps of the batch just seen
    seen = [raw[MESSAGES[i][t + 1]] for i in range(2) for t in range(3) if not DONES[i][t]]
    assert float(method.stats.mean) == pytest.approx(np.mean(seen), rel=1e-3, abs=1e-6)
    assert float(method.stats.var) == pytest.approx(np.var(seen), rel=1e-3, abs=1e-9)
    mean, std = float(method.stats.mean), float(method.stats.std)

    def value(m: str) -> float:
        z = (raw[m] - mean) / std
        return z if z > -0.2 else 0.0

    reward = method.reward(batch)
    assert torch.allclose(reward, expected(value), rtol=1e-4, atol=1e-5)
    assert (reward != 0).any() and reward[0, 1] == 0
    method.close()


def test_ranking_update_fills_the_reservoir_and_asks_for_pairs(tmp_path):
    method = make_method("oni-ranking", tmp_path, subsample=3, pairs_per_batch=4)
    batch = make_batch()
    method.reward(batch)
    method.update(batch)
    assert method.reservoir.seen == 2  # steps 0 and 3 of the 2 x 3 flattened batch
    stats = method.labeler.stats()
    assert stats["submitted"] == 4
    wait_labels(method, stats["queued"])
    labels = method.labeler.labels()
    question = MotifPreference()
    for pair, label in labels.items():
        assert label == ask(OracleLM(), question, [pair], SamplingParams()).labels[0]
    method.update(batch)
    assert len(method.model) == sum(1 for lab in labels.values() if lab != 3)
    method.close()


# -- state ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONI)
def test_state_round_trip_keeps_labels_pairs_and_models(tmp_path, name):
    options = {} if name == "oni-retrieval" else {"train_thread": False, "train_time_share": 1.0, "burst_steps": 3}
    method = make_method(name, tmp_path, **options)
    batch = make_batch()
    for _ in range(3):
        method.reward(batch)
        method.update(batch)
        method.labeler.service.wait_idle(30)
    method.update(batch)
    state = method.state_dict()
    summary = method.state_summary()
    assert summary["labels"] > 0
    before = method.reward(batch)
    method.close()

    resumed = make_method(name, tmp_path, **options)
    resumed.load_state_dict(state)
    assert resumed.state_summary() == summary
    assert torch.allclose(resumed.reward(batch), before)
    resumed.close()


def test_state_of_another_method_is_refused(tmp_path):
    state = make_method("oni-retrieval", tmp_path).state_dict()
    with pytest.raises(DataError, match="oni-retrieval"):
        make_method("oni-ranking", tmp_path).load_state_dict(state)


def test_a_state_labelled_under_another_goal_is_refused_before_anything_loads(tmp_path):
    """A resume with another goal (or prompt version) would take labels of one question for answers to
    another; the error names both and the fix, and the method is left as it was built."""
    trained = make_method("oni-retrieval", tmp_path)
    batch = make_batch()
    trained.reward(batch)
    trained.update(batch)
    wait_labels(trained, 4)
    state = trained.state_dict()
    trained.close()
    resumed = make_method("oni-retrieval", tmp_path, goal="combat")
    with pytest.raises(DataError, match="goal=defaultgoal.*goal=combat") as err:
        resumed.load_state_dict(state)
    assert "new run folder" in err.value.hint
    assert len(resumed.vocab) == 0 and resumed.labeler.stats()["labels_total"] == 0
    resumed.close()
    same = make_method("oni-retrieval", tmp_path)
    same.load_state_dict(state)  # the same question resumes as before
    assert same.state_summary()["labels"] == len(state["service"]["labels"]) > 0
    same.close()


def test_scoring_from_a_checkpoint_never_contacts_the_lm(tmp_path):
    """Evaluation builds the method from a checkpoint and calls reward() only: no server is needed."""
    trained = make_method("oni-retrieval", tmp_path)
    batch = make_batch()
    trained.reward(batch)
    trained.update(batch)
    wait_labels(trained, 4)
    trained.update(batch)
    state, before = trained.state_dict(), trained.reward(batch)
    trained.close()
    assert before.sum() > 0
    unreachable = {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "cache": ":memory:"}
    method = make_method("oni-retrieval", tmp_path, lm=unreachable)
    method.load_state_dict(state)
    assert torch.equal(method.reward(make_batch([[WALL, "You hear a door open.", NEWT, GOLD]] * 2)), method.reward(
        make_batch([[WALL, "You hear a door open.", NEWT, GOLD]] * 2)))  # new captions: no question, no error
    assert torch.equal(method.reward(batch), before)
    started = time.monotonic()
    method.close()
    assert time.monotonic() - started < 5 and method.labeler.lm._lm is None  # never built


# -- configuration -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONI)
def test_refuses_a_task_without_messages(name):
    cls = get_method(name)
    task = get_task("housekeep:beechwood_0")  # Crafter has its captions (issue 48); Housekeep offers no text
    with pytest.raises(ConfigError, match="needs observation keys \\['message'\\]"):
        space = make_adapter(task).observation_space()
        cls.check_run(CheckContext(task, space, parse_options(cls, {}), LMConfig()))


def test_unreachable_lm_server_stops_the_run_before_training():
    spec = RunSpec(method="oni-retrieval", task="nethack:score", steps=4096,
                   lm={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    with pytest.raises(UserError, match="cannot reach the LM server"):
        resolve(spec)


def test_unknown_goal_or_prompt_version_stops_the_run_before_training():
    with pytest.raises(ConfigError, match="unknown Motif goal"):
        resolve(RunSpec(method="oni-ranking", task="nethack:score", steps=4096, method_options={"goal": "fame"}))
    with pytest.raises(ConfigError, match="nope"):
        resolve(RunSpec(method="oni-retrieval", task="nethack:score", steps=4096,
                        method_options={"prompt_version": "nope"}))
    with pytest.raises(ConfigError, match="nope"):  # a grid's check (no LM server asked) finds it too
        resolve(RunSpec(method="oni-retrieval", task="nethack:score", steps=4096,
                        method_options={"prompt_version": "nope"}), check_device=False)


def test_published_defaults_and_the_count_wrapper():
    for name in ONI:
        cls = get_method(name)
        assert cls.default_int_coef == 0.4 and cls.uses_lm and cls.required_keys == ("message",)
        opts = parse_options(cls, {})
        assert opts.beta == 3.0 and opts.lm_batch_size == 100
        context = MethodContext(task=get_task("nethack:score"), seed=0, run_dir=Path("."))
        env = cls.wrap_env(make_adapter("nethack:score").make_env(), opts, context)
        assert isinstance(env, EpisodicMessageCount)
        env.close()
    for name in ("oni-classification", "oni-ranking"):
        opts = parse_options(get_method(name), {})
        assert (opts.lr, opts.batch_size, opts.burst_steps, opts.burst_until, opts.steps_per_batch) == (1e-4, 256, 32, 25_000, 1)
    assert parse_options(get_method("oni-classification"), {}).threshold == 0.5
    ranking = parse_options(get_method("oni-ranking"), {})
    assert (ranking.subsample, ranking.pairs_per_batch, ranking.goal) == (10, 10, "defaultgoal")
    spec = resolve(RunSpec(method="oni-retrieval", task="nethack:score-extended", steps=4096))
    assert (spec.int_coef, spec.ext_coef) == (0.4, 0.1)
