"""The SQLite completion cache: persistence, counters, and several processes at once."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

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
