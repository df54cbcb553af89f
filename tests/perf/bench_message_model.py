"""The published NetHack network with its message model run once per distinct message of a batch, against every
message through it (the network's computation), measured in the same run (issue 54, "networks that keep up").

Measured and not kept (docs/GPU.md, "The message model once per distinct message"): the outputs agree to 1e-7,
but finding the distinct messages (``torch.unique`` over [B, 256] bytes) costs what it saves: on an H200 the
encoder's forward pass took 0.58-0.82x the time and forward plus backward 0.93-1.00x; on one CPU thread
0.86-1.16x. The variant lives here so that it can be measured again.

    PYTHONPATH=. python tests/perf/bench_message_model.py [--repeats 5] [--batches 1024 4096] [--device cpu]
        [--policy random|trained RUN_DIR] [--threads 1]

Observations come from NLE itself (NetHackScore, random actions by default), so the batches repeat messages as
play does. For each batch size it times the whole encoder's forward pass (what the inference worker runs) and
forward plus backward (what the learner runs), plain and distinct interleaved, and prints medians, their ratio,
the share of distinct messages and the largest difference between the two outputs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np
import torch
from sample_factory.utils.attr_dict import AttrDict

from llmexplore.envs import make_adapter
from llmexplore.envs.nethack import nle_baseline


def collect(steps: int, seed: int = 0) -> tuple[dict[str, torch.Tensor], object]:
    """`steps` observations of the NetHack adapter (glyphs added) under random actions, stacked: key -> [N, ...]."""
    env = make_adapter("nethack:score").make_env(extra_keys=("glyphs",))
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows: dict[str, list[np.ndarray]] = {key: [] for key in ("glyphs", "blstats", "message")}
    for _ in range(steps):
        for key in rows:
            rows[key].append(np.array(obs[key], copy=True))
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            obs, _ = env.reset()
    space = env.observation_space
    env.close()
    return {key: torch.as_tensor(np.stack(values)) for key, values in rows.items()}, space


def distinct_message_forward(self: nle_baseline.MessageCNN, message: torch.Tensor) -> torch.Tensor:
    """The character CNN on each distinct message once, its features gathered back to every row: [B, 256] ->
    [B, 128], the same function (in the backward pass the gather sums a message's copies' gradients)."""
    distinct, inverse = torch.unique(message, dim=0, return_inverse=True)
    return plain_message_forward(self, distinct).index_select(0, inverse)


plain_message_forward = nle_baseline.MessageCNN.forward


def timed(fn: Callable[[], object], device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timings of each figure (medians are printed)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1024, 4096], help="batch sizes measured")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the network runs")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (sample-factory's workers use 1)")
    args = parser.parse_args()
    if args.repeats < 1 or any(b < 1 for b in args.batches) or args.threads < 1:
        parser.error("--repeats, --batches and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    obs, space = collect(max(args.batches))
    torch.manual_seed(0)
    encoder = nle_baseline.NLEBaselineEncoder(AttrDict({}), space).to(args.device)
    print(f"published NetHack encoder on {args.device}, {args.threads} thread(s), medians of {args.repeats}")
    print("| batch | distinct messages | pass | every message (ms) | once per distinct (ms) | ratio | max |diff| |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for batch in args.batches:
        sample = {key: value[:batch].to(args.device) for key, value in obs.items()}
        distinct = torch.unique(sample["message"], dim=0).shape[0]
        passes = {
            "forward": lambda: encoder(sample),
            "forward+backward": lambda: encoder(sample).sum().backward(),
        }
        for name, run in passes.items():
            times: dict[str, list[float]] = {"plain": [], "distinct": []}
            outputs = {}
            for repeat in range(args.repeats + 1):  # the first of each is a warm-up, not counted
                for way in (("plain", "distinct") if repeat % 2 else ("distinct", "plain")):
                    nle_baseline.MessageCNN.forward = plain_message_forward if way == "plain" else distinct_message_forward
                    encoder.zero_grad(set_to_none=True)
                    elapsed = timed(run, args.device)
                    if repeat:
                        times[way].append(elapsed)
                    with torch.no_grad():
                        outputs[way] = encoder(sample)
            nle_baseline.MessageCNN.forward = plain_message_forward
            plain, once = statistics.median(times["plain"]), statistics.median(times["distinct"])
            diff = (outputs["plain"] - outputs["distinct"]).abs().max().item()
            print(f"| {batch:,} | {distinct} ({100 * distinct / batch:.1f}%) | {name} | {1e3 * plain:,.1f} | "
                  f"{1e3 * once:,.1f} | {plain / once:.2f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
