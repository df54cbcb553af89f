"""The SQLite completion cache: persistence, counters, and several processes at once."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from types import SimpleNamespace

import pytest

from llmexplore.lm.base import Completion, TokenLogprob
from llmexplore.lm.cache import CachedLM, LMCache, cache_key
from llmexplore.lm.config import SamplingParams
from llmexplore.lm.oracle import OracleLM
from llmexplore.methods.motif.questions import MotifPreference

P = SamplingParams()


class CountingOracle(OracleLM):
    def __init__(self):
        super().__init__()
        self.prompts_seen: list[str] = []

    def generate(self, prompts, params):
        self.prompts_seen.extend(prompts)
        return super().generate(prompts, params)


def test_only_new_prompts_reach_the_backend_and_survive_reopening(tmp_path: Path):
    path = tmp_path / "c.sqlite3"
    q = MotifPreference()
    prompts = [q.prompt((f"You kill the newt {i}!", "")) for i in range(5)]
    backend = CountingOracle()
    lm = CachedLM(backend, LMCache(path))
    first = lm.generate(prompts + prompts[:2], P)  # duplicates inside one batch are asked once
    assert len(backend.prompts_seen) == 5 and lm.cache.counters.misses == 7 and lm.cache.counters.stored == 5
    lm.cache.close()

    backend2 = CountingOracle()
    lm2 = CachedLM(backend2, LMCache(path))
    again = lm2.generate(prompts, P)
    assert again == first[:5] and backend2.prompts_seen == []
    assert lm2.stats()["hits"] == 5 and lm2.stats()["misses"] == 0 and lm2.stats()["entries"] == 5
    # other sampling settings are other questions
    lm2.generate(prompts[:1], SamplingParams(temperature=0.7))
    assert len(backend2.prompts_seen) == 1
    lm2.close()


def test_logprobs_round_trip(tmp_path: Path):
    cache = LMCache(tmp_path / "c.sqlite3")
    c = Completion("a b", "length", (TokenLogprob("a", -0.5, {"a": -0.5, "b": -1.2}), TokenLogprob(" b", -0.1)))
    key = cache_key("ns", P.cache_text(), "prompt")
    cache.put_many("ns", [(key, c)])
    assert cache.get(key) == c and cache.get(b"x" * 16) is None
    assert cache.models() == {"ns": 1}


def test_keys_separate_backends_models_params_and_prompts():
    keys = {cache_key("oracle|m1", P.cache_text(), "p"), cache_key("oracle|m2", P.cache_text(), "p"),
            cache_key("openai-chat|m1", P.cache_text(), "p"), cache_key("oracle|m1", SamplingParams(seed=1).cache_text(), "p"),
            cache_key("oracle|m1", P.cache_text(), "p ")}
    assert len(keys) == 5


def _worker(path: str, worker: int, n: int, queue) -> None:
    cache = LMCache(path, busy_timeout_s=60)
    written = 0
    for batch in range(n):
        # overlapping keys: every worker writes keys 0..n*10 in a different order, plus its own
        items = [(cache_key("ns", "p", f"shared-{(batch * 10 + j + worker * 7) % (n * 10)}"),
                  Completion(f"shared-{(batch * 10 + j + worker * 7) % (n * 10)}")) for j in range(10)]
        items.append((cache_key("ns", "p", f"own-{worker}-{batch}"), Completion(f"own-{worker}-{batch}")))
        cache.put_many("ns", items)
        written += len(items)
        got = cache.get_many([k for k, _ in items])
        assert all(got[k].text == c.text for k, c in items)
    queue.put((worker, written, cache.counters.as_dict()))
    cache.close()


def test_several_processes_share_one_cache(tmp_path: Path):
    path = str(tmp_path / "shared.sqlite3")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    n_workers, n = 4, 30
    procs = [ctx.Process(target=_worker, args=(path, w, n, queue)) for w in range(n_workers)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sorted(r[0] for r in results) == list(range(n_workers))
    assert all(r[2]["hits"] == r[2]["lookups"] == n * 11 for r in results)
    cache = LMCache(path)
    assert cache.entries() == n * 10 + n_workers * n
    for w in range(n_workers):
        assert cache.get(cache_key("ns", "p", f"own-{w}-{n - 1}")).text == f"own-{w}-{n - 1}"
    assert cache._connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert cache._connect().execute("PRAGMA integrity_check").fetchone()[0] == "ok"



def test_opening_a_new_cache_another_process_is_creating_waits_instead_of_database_is_locked(tmp_path: Path):
    """Two `lm annotate` chunks started together both open the dataset's new cache: while one holds its
    first write, the other's switch to WAL used to fail at once with "database is locked" (SQLite's busy
    timeout does not cover it). The other opener here is a plain SQLite connection in that state."""
    import sqlite3
    import threading
    import time

    path = tmp_path / "new.sqlite3"
    first = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    first.execute("CREATE TABLE started (x)")
    first.execute("BEGIN IMMEDIATE")  # the first process is still creating the file
    threading.Timer(0.5, lambda: first.execute("COMMIT")).start()
    t0 = time.monotonic()
    cache = LMCache(path, busy_timeout_s=30)
    assert time.monotonic() - t0 >= 0.4  # it waited for the other process
    cache.put_many("m", [(b"k" * 16, Completion("answer", "stop"))])
    assert cache.get(b"k" * 16).text == "answer"
    assert cache._connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    first.close()


def test_a_cache_held_past_its_busy_timeout_is_one_clear_error(tmp_path: Path):
    import sqlite3

    from llmexplore.errors import DataError

    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE started (x)")
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(DataError, match="another process holds it"):
        LMCache(path, busy_timeout_s=0.3)
    holder.execute("COMMIT")
    holder.close()


# -- stored answers carry a digest ------------------------------------------------------------------


def test_an_edited_answer_is_set_aside_named_and_asked_again(tmp_path: Path, caplog):
    import sqlite3

    path = tmp_path / "c.sqlite3"
    first = CachedLM(OracleLM(), LMCache(path))
    prompts = ["You kill the newt!", "You see here 7 gold pieces.", "It's solid stone."]
    answers = [c.text for c in first.generate(prompts, P)]
    first.close()
    with sqlite3.connect(path) as raw:  # an answer edited in the file
        raw.execute("UPDATE completions SET text = 'Prefer the first' WHERE id = 2")  # stored in prompt order
    backend = CountingOracle()
    lm = CachedLM(backend, LMCache(path))
    with caplog.at_level("WARNING"):
        again = [c.text for c in lm.generate(prompts, P)]
    assert again == answers  # the old code handed out 'Prefer the first'
    assert backend.prompts_seen == [prompts[1]]  # only the edited one is asked again
    assert f"LM cache {path}: 1 stored answer(s) differ from their digest" in caplog.text
    assert lm.cache.counters.set_aside == 1
    kept = lm.cache._connect().execute("SELECT text FROM set_aside").fetchall()
    assert kept == [("Prefer the first",)]  # kept for a look, never read as an answer
    assert lm.generate(prompts, P) and backend.prompts_seen == [prompts[1]]  # the fresh answer holds


def test_an_answer_moved_to_another_key_fails_its_digest(tmp_path: Path):
    import sqlite3

    path = tmp_path / "c.sqlite3"
    cache = LMCache(path)
    cache.put_many("m", [(b"a" * 16, Completion("first")), (b"b" * 16, Completion("second"))])
    cache.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE completions SET key = ? WHERE key = ?", (b"c" * 16, b"a" * 16))
    cache = LMCache(path)
    assert cache.get(b"c" * 16) is None and cache.get(b"b" * 16).text == "second"


def test_a_cache_file_of_an_older_version_gets_digests_and_its_rows_are_read(tmp_path: Path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as raw:  # the schema before digests
        raw.executescript("CREATE TABLE completions (id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, model TEXT "
                          "NOT NULL, text TEXT NOT NULL, finish TEXT, logprobs TEXT, created REAL NOT NULL);")
        raw.execute("INSERT INTO completions (key, model, text, created) VALUES (?, 'm', 'old answer', 0)",
                    (b"o" * 16,))
    cache = LMCache(path)
    assert cache.get(b"o" * 16).text == "old answer"  # no digest: read as before
    cache.put_many("m", [(b"n" * 16, Completion("new answer"))])
    assert cache.get(b"n" * 16).text == "new answer" and cache.counters.set_aside == 0

# -- what the key holds: every setting that changes an answer ------------------------------------------
def test_the_oracle_keeps_its_plain_namespace_so_existing_caches_stay_valid(tmp_path: Path):
    """The oracle's model id carries its rule version and noise, and nothing else changes its answers:
    its key is ``oracle|<model id>`` as before, and rows written under it are still read."""
    from llmexplore.lm.oracle import ORACLE_VERSION

    path = tmp_path / "old.sqlite3"
    namespace = f"oracle|llmexplore-oracle-{ORACLE_VERSION}"
    old = LMCache(path)
    old.put_many(namespace, [(cache_key(namespace, P.cache_text(), "a prompt"), Completion("stored before"))])
    old.close()
    backend = CountingOracle()
    lm = CachedLM(backend, LMCache(path))
    assert lm.namespace == namespace
    assert lm.generate(["a prompt"], P)[0].text == "stored before" and backend.prompts_seen == []
    noisy = CachedLM(OracleLM(placement_noise=0.1, placement_seed=2), LMCache())
    assert noisy.namespace == "oracle|" + noisy.model_id  # noise is in the model id, as before


class _Fake(OracleLM):
    """An oracle with another name and settings, to see what ``CachedLM`` keys."""

    name = "fake-chat"

    def __init__(self, settings: dict):
        super().__init__()
        self.settings = settings

    @property
    def model_id(self) -> str:
        return "weights"

    def cache_settings(self) -> dict:
        return self.settings


def test_backend_settings_that_change_answers_are_part_of_the_key():
    namespaces = {CachedLM(_Fake(s), LMCache()).namespace for s in
                  ({"system": "Be brief."}, {"system": "Be thorough."}, {"weights": "ab"}, {"weights": "cd"})}
    assert len(namespaces) == 4 and all(n.startswith("fake-chat|weights#") for n in namespaces)
    # the digest is of the settings' content: the same settings in another order key the same rows
    assert CachedLM(_Fake({"a": 1, "b": [2]}), LMCache()).namespace == CachedLM(_Fake({"b": [2], "a": 1}),
                                                                               LMCache()).namespace


def test_an_old_cache_file_is_read_and_rows_under_an_older_key_simply_miss(tmp_path: Path):
    """Rows a real backend stored before its settings were keyed (``name|model_id``) are never taken for
    answers made under settings they did not record; the file opens and the model is asked again."""
    path = tmp_path / "old.sqlite3"
    old = LMCache(path)
    old.put_many("fake-chat|weights", [(cache_key("fake-chat|weights", P.cache_text(), "a prompt"),
                                        Completion("answered under another system prompt"))])
    old.close()
    backend = _Fake({"system": "Be brief."})
    lm = CachedLM(backend, LMCache(path))
    assert lm.generate(["a prompt"], P)[0].text != "answered under another system prompt"
    assert lm.stats()["misses"] == 1 and lm.cache.models() == {"fake-chat|weights": 1, lm.namespace: 1}
    lm.close()


def test_openai_keys_its_system_prompt_and_keeps_the_plain_key_without_one():
    pytest.importorskip("openai")
    from llmexplore.lm.backends.openai_backend import OpenAIBackend

    def namespace(system):
        backend = OpenAIBackend("m", "http://127.0.0.1:9/v1", system=system, check=False)
        try:
            return CachedLM(backend, LMCache()).namespace
        finally:
            backend.close()

    assert namespace(None) == "openai-chat|m"  # unchanged: rows stored without a system prompt stay valid
    assert len({namespace(None), namespace("Be brief."), namespace("Be thorough.")}) == 3


def _weights(folder: Path, content: bytes) -> Path:
    """A model folder of that content (config, one large weights file, hidden download metadata)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "fake"}')
    (folder / "model.safetensors").write_bytes(content * (300_000 // len(content)))
    (folder / ".cache").mkdir()
    (folder / ".cache" / "download.metadata").write_text(str(folder))  # machine-specific: left out
    return folder


def _transformers_lm(monkeypatch, model: Path, **options) -> CachedLM:
    """The transformers backend over stand-ins for the tokenizer and model (no weights are loaded)."""
    import torch

    from llmexplore.lm.backends import transformers_backend as tb

    class Loaded:
        pad_token_id, eos_token, chat_template = 0, "</s>", None

        @classmethod
        def from_pretrained(cls, path, **kw):
            return cls()

        def to(self, device):
            return self

        def eval(self):
            return self

    fake = SimpleNamespace(AutoTokenizer=Loaded, AutoModelForCausalLM=Loaded)
    monkeypatch.setattr(tb, "require", lambda module, *a: torch if module == "torch" else fake)
    return CachedLM(tb.TransformersBackend(str(model), **options), LMCache())


def test_transformers_keys_the_weights_content_dtype_and_system_prompt(monkeypatch, tmp_path: Path):
    first = _weights(tmp_path / "a" / "model", b"first fine-tune ")
    other = _weights(tmp_path / "b" / "model", b"other fine-tune ")  # same folder name, other weights
    copy = _weights(tmp_path / "elsewhere" / "model", b"first fine-tune ")  # the same weights, moved
    ns = {name: _transformers_lm(monkeypatch, path).namespace
          for name, path in (("first", first), ("other", other), ("copy", copy))}
    assert ns["first"] != ns["other"] and ns["first"] == ns["copy"]
    assert ns["first"].startswith("transformers-")
    assert "|model#" in ns["first"]  # still readable
    assert _transformers_lm(monkeypatch, first, system="Be brief.").namespace != ns["first"]
    assert _transformers_lm(monkeypatch, first, dtype="bfloat16").namespace != ns["first"]
    assert _transformers_lm(monkeypatch, first, batch_size=2, threads=1).namespace == ns["first"]


def test_vllm_keys_the_weights_content_engine_options_and_system_prompt(monkeypatch, tmp_path: Path):
    from llmexplore.lm.backends import vllm_backend as vb

    engines: list[dict] = []
    fake = SimpleNamespace(LLM=lambda **kw: engines.append(kw))
    monkeypatch.setattr(vb, "require", lambda *a: fake)
    first = _weights(tmp_path / "a" / "model", b"first fine-tune ")
    other = _weights(tmp_path / "b" / "model", b"other fine-tune ")
    copy = _weights(tmp_path / "elsewhere" / "model", b"first fine-tune ")

    def namespace(path: Path, **options) -> str:
        return CachedLM(vb.VLLMBackend(str(path), **options), LMCache()).namespace

    base = namespace(first)
    assert base.startswith("vllm-chat|model#") and base == namespace(copy) and base != namespace(other)
    assert namespace(first, dtype="float16") != base and namespace(first, dtype="bfloat16") != namespace(
        first, dtype="float16")
    assert namespace(first, system="Be brief.") != base
    assert namespace(first, quantization="awq") != base and namespace(first, seed=1) != base
    # options that change only speed or memory keep the rows
    assert namespace(first, gpu_memory_utilization=0.5, tensor_parallel_size=2) == base
    assert engines[-1]["gpu_memory_utilization"] == 0.5  # every option still reaches the engine
