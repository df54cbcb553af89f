"""Speed of the LM subsystem: oracle annotation, cache hits, and the HTTP server at concurrency 32.

Run: PYTHONPATH=$PWD python tests/perf/bench_lm.py [--rounds 3] [--pairs 20000] [--http-prompts 3000]
Prints medians over rounds and ratios against the targets (20k pairs/s, 50k lookups/s,
500 prompts/s) and against a baseline measured in the same run (the bare oracle, no
cache or label file). Figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from llmexplore.methods.motif.annotate import annotate_pairs  # noqa: E402
from llmexplore.lm.backends.openai_backend import OpenAIBackend  # noqa: E402
from llmexplore.lm.cache import CachedLM, LMCache, cache_key  # noqa: E402
from llmexplore.lm.base import Completion  # noqa: E402
from llmexplore.lm.config import SamplingParams  # noqa: E402
from llmexplore.lm.oracle import OracleLM  # noqa: E402
from llmexplore.methods.motif.questions import MotifPreference  # noqa: E402
from tests.helpers.lm_server import ServerProcess  # noqa: E402
from tests.helpers.pairs import MESSAGES, make_dataset  # noqa: E402

P = SamplingParams()


def distinct_pairs(n: int, salt: str, pool: int | None = None) -> list[tuple[str, str]]:
    """n different pairs. pool=None: every first message is new (worst case for the oracle's
    per-message memo); pool=K: messages come from K distinct ones, as in real datasets where
    messages repeat while pairs rarely do."""
    m = len(MESSAGES)
    if pool is None:
        return [(f"{MESSAGES[i % m]} {salt}{i}", MESSAGES[(i * 7 + 3) % m]) for i in range(n)]
    msgs = [f"{MESSAGES[i % m]} {salt}{i}" for i in range(pool)]
    pairs, seen, i = [], set(), 0
    while len(pairs) < n:
        pair = (msgs[(i * 7919) % pool], msgs[(i * 104729 + i // pool) % pool])
        if pair[0] != pair[1] and pair not in seen:
            seen.add(pair)
            pairs.append(pair)
        i += 1
    return pairs


def bench_bare_oracle(n: int) -> float:
    q, oracle = MotifPreference(), OracleLM()
    prompts = [q.prompt(p) for p in distinct_pairs(n, f"bare{time.perf_counter_ns()}-")]
    t = time.perf_counter()
    for start in range(0, n, 1000):
        for c, prompt in zip(oracle.generate(prompts[start:start + 1000], P), prompts[start:start + 1000]):
            q.parse(c.text, prompt)
    return n / (time.perf_counter() - t)


def bench_annotation(n: int, tmp: Path, round_: int, pool: int | None = None) -> float:
    root = tmp / f"ann{round_}-{pool}"
    # a salt of its own per case: the oracle memoises per message, and messages shared with an earlier
    # case of the same process would make this one look faster than a fresh dataset is
    ds = make_dataset(root, distinct_pairs(n, f"r{round_}-{pool}-", pool))
    lm = CachedLM(OracleLM(), LMCache(root / "cache.sqlite3"))
    report = annotate_pairs(ds, lm, batch_size=1000)
    assert report.counts["unknown"] == 0 and lm.backend_prompts == n
    lm.close()
    return report.pairs_per_second


def bench_cache(tmp: Path, entries: int = 100_000) -> dict[str, float]:
    cache = LMCache(tmp / "hits.sqlite3")
    keys = [cache_key("ns", "p", f"prompt {i}") for i in range(entries)]
    for start in range(0, entries, 5000):
        cache.put_many("ns", [(k, Completion(f"answer {i}\nPreferred: 1")) for i, k in
                              enumerate(keys[start:start + 5000], start)])
    out = {}
    t = time.perf_counter()
    for start in range(0, entries, 1000):
        got = cache.get_many(keys[start:start + 1000])
        assert len(got) == len(keys[start:start + 1000])
    out["batched get_many (1000/batch)"] = entries / (time.perf_counter() - t)
    n = 20_000
    t = time.perf_counter()
    for k in keys[:n]:
        assert cache.get(k) is not None
    out["single get"] = n / (time.perf_counter() - t)
    cache.close()
    # through CachedLM with real Motif prompts: hashing included
    lm = CachedLM(OracleLM(), LMCache(tmp / "lm.sqlite3"))
    q = MotifPreference()
    prompts = [q.prompt(p) for p in distinct_pairs(20_000, "hit")]
    for start in range(0, len(prompts), 1000):
        lm.generate(prompts[start:start + 1000], P)
    before = lm.backend_prompts
    t = time.perf_counter()
    for start in range(0, len(prompts), 1000):
        lm.generate(prompts[start:start + 1000], P)
    out["CachedLM.generate, all hits (1000/batch)"] = len(prompts) / (time.perf_counter() - t)
    assert lm.backend_prompts == before
    lm.close()
    return out


def bench_http(server: ServerProcess, n: int, round_: int, endpoint: str = "chat", per_request: int = 1) -> float:
    backend = OpenAIBackend(server.model, server.base_url, concurrency=32, timeout_s=60, endpoint=endpoint,
                            prompts_per_request=per_request)
    q = MotifPreference()
    prompts = [q.prompt(p) for p in distinct_pairs(n, f"http{round_}-{endpoint}{per_request}-")]
    backend.generate(prompts[:64], P)  # warm the connection pool
    t = time.perf_counter()
    out = backend.generate(prompts, P)
    rate = n / (time.perf_counter() - t)
    assert all(q.parse(c.text, p).ok for c, p in zip(out, prompts))
    backend.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--http-prompts", type=int, default=3000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bare = statistics.median(bench_bare_oracle(args.pairs) for _ in range(args.rounds))
        ann = statistics.median(bench_annotation(args.pairs, tmp, r) for r in range(args.rounds))
        ann_pool = statistics.median(bench_annotation(args.pairs, tmp, r, 2000) for r in range(args.rounds))
        caches = [bench_cache(tmp / f"c{r}") for r in range(args.rounds) if not (tmp / f"c{r}").mkdir()]
        http = {}
        with ServerProcess() as server:
            for endpoint, per_request in (("chat", 1), ("completion", 1), ("completion", 8)):
                http[(endpoint, per_request)] = statistics.median(
                    bench_http(server, args.http_prompts, r, endpoint, per_request) for r in range(args.rounds))
    print(f"median of {args.rounds} rounds")
    print(f"bare oracle (answer + parse, no cache, no files):  {bare:10,.0f} pairs/s   (baseline)")
    print(f"oracle annotation job ({args.pairs:,} distinct pairs, cache + labels): {ann:10,.0f} pairs/s   "
          f"{ann / bare:.2f}x baseline, {ann / 20_000:.2f}x target 20,000")
    print(f"oracle annotation job ({args.pairs:,} distinct pairs of 2,000 distinct messages): {ann_pool:10,.0f} pairs/s   "
          f"{ann_pool / bare:.2f}x baseline, {ann_pool / 20_000:.2f}x target 20,000")
    for name in caches[0]:
        rate = statistics.median(c[name] for c in caches)
        print(f"cache hits, {name}: {rate:10,.0f} lookups/s   {rate / 50_000:.2f}x target 50,000")
    for (endpoint, per_request), rate in http.items():
        print(f"HTTP server + oracle, openai backend, {endpoint} endpoint, {per_request} prompt(s)/request, "
              f"concurrency 32: {rate:10,.0f} prompts/s   {rate / bare:.3f}x baseline, {rate / 500:.2f}x target 500")


if __name__ == "__main__":
    main()
