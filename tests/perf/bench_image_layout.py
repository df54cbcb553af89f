"""Memory layouts for Crafter's image stem on the CPU: the layout the encoders use against the alternatives.

    PYTHONPATH=. python tests/perf/bench_image_layout.py [--batches 16 64 256] [--repeats 5]

Why: issue 54 asks whether channels-last makes the networks keep up. Crafter's encoders permute [B, 64, 64, 3]
bytes to [B, 3, 64, 64] without copying, which is already a channels-last tensor. This prints, per batch
size, one thread's CPU microseconds per sample for the ``small`` network's DQN stem (forward, and forward +
backward) with (a) the input as the encoders make it, (b) the weights converted to channels-last too and
(c) the input made contiguous in [B, 3, H, W] order, interleaved, medians of ``--repeats``, and each
variant's largest difference from (a).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from llmexplore.networks.encoders import dqn_stem


def cpu_seconds(fn: Callable[[], object], calls: int) -> float:
    """CPU seconds per call of ``fn`` (after one warm-up call)."""
    fn()
    started = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    stem = dqn_stem(3, nn.ELU)
    stem_channels_last = dqn_stem(3, nn.ELU)
    stem_channels_last.load_state_dict(stem.state_dict())
    stem_channels_last = stem_channels_last.to(memory_format=torch.channels_last)
    for batch in args.batches:
        raw = torch.randint(0, 255, (batch, 64, 64, 3), dtype=torch.uint8)

        def image(raw: torch.Tensor = raw) -> torch.Tensor:
            return raw.float().permute(0, 3, 1, 2) / 255.0  # as CrafterEncoder.forward

        variants = {
            "as the encoders run it": lambda: stem(image()),
            "weights channels-last too": lambda: stem_channels_last(image()),
            "input contiguous [B, 3, H, W]": lambda: stem(image().contiguous()),
        }
        calls = max(2048 // batch, 4)
        forward: dict[str, list[float]] = {name: [] for name in variants}
        backward: dict[str, list[float]] = {name: [] for name in variants}
        with torch.no_grad():
            reference = stem(image())
            gaps = {name: float((fn() - reference).abs().max()) for name, fn in variants.items()}
            for _ in range(args.repeats):
                for name, fn in variants.items():
                    forward[name].append(1e6 * cpu_seconds(fn, calls) / batch)
        for _ in range(args.repeats):
            for name, fn in variants.items():
                backward[name].append(1e6 * cpu_seconds(lambda fn=fn: fn().sum().backward(), max(calls // 4, 2)) / batch)
        print(f"batch {batch}:")
        for name in variants:
            print(f"  {name:30s} forward {statistics.median(forward[name]):7.1f} us/sample, forward + backward "
                  f"{statistics.median(backward[name]):7.1f}, largest difference {gaps[name]:.1e}", flush=True)


if __name__ == "__main__":
    main()
