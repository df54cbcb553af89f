"""Reward-model training speed (pairs/s) at batch 1024 on a dataset from `motif collect`.

Prints the median over epochs of our trainer (one network pass per distinct message of a
batch), the same step run on every message occurrence (what the published trainer did)
measured in the same process, their ratio, and the share of distinct messages per batch.

    PYTHONPATH=$PWD python tests/perf/motif_reward_training.py [--pairs 40000] [--epochs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.model import MotifRewardModel, preference_loss  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, prepare_data, train_reward_model  # noqa: E402
from tests.helpers.motif import ORACLE_ANNOTATION, label_with_oracle  # noqa: E402


def per_occurrence_pairs_per_second(data, batch_size: int, batches: int) -> float:
    """The published way: the network runs on all 2 x batch messages."""
    torch.manual_seed(0)
    model = MotifRewardModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-5)
    order = data.train[torch.randperm(len(data.train))]
    times = []
    for b in range(batches):
        index = order[b * batch_size : (b + 1) * batch_size]
        started = time.perf_counter()
        messages = data.table[data.pairs[index].reshape(-1)]
        rewards = model(messages).reshape(-1, 2)
        loss = preference_loss(rewards, data.labels[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    return batch_size / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=40_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--dataset", help="an existing labelled dataset (default: collect one)")
    parser.add_argument("--annotation", default=ORACLE_ANNOTATION)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for both measurements")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        dataset = args.dataset
        if dataset is None:
            dataset = Path(tmp) / "pairs"
            started = time.perf_counter()
            ds, stats = collect_pairs("nethack:score", args.pairs, dataset, seed=0)
            print(f"collected {args.pairs} pairs ({stats.steps} env steps) in {time.perf_counter() - started:.1f} s")
            label_with_oracle(dataset)
        options = RewardTrainingOptions(batch_size=args.batch_size, epochs=args.epochs, threads=args.threads)
        data = prepare_data(dataset, args.annotation, options)
        distinct = []
        order = data.train[torch.randperm(len(data.train))]
        for b in range(0, len(order) - args.batch_size + 1, args.batch_size):
            pairs = data.pairs[order[b : b + args.batch_size]]
            distinct.append(len(torch.unique(pairs)) / pairs.numel())
        rows = []
        train_reward_model(dataset, args.annotation, Path(tmp) / "rm", options, on_epoch=rows.append)
        ours = statistics.median(r["pairs_per_second"] for r in rows)
        naive = per_occurrence_pairs_per_second(data, args.batch_size, batches=5)

    print(f"torch threads {torch.get_num_threads()}; dataset {data.fingerprint['annotated_pairs']} pairs, "
          f"{data.fingerprint['unique_messages']} distinct messages")
    print(f"distinct messages per batch of {2 * args.batch_size}: median share {statistics.median(distinct):.3f}")
    print(f"reward-model training, batch {args.batch_size}: median {ours:,.0f} pairs/s over {len(rows)} epochs "
          f"(per epoch: {', '.join(format(r['pairs_per_second'], ',.0f') for r in rows)})")
    print(f"per-occurrence network passes (published way): {naive:,.0f} pairs/s")
    print(f"ratio ours / per-occurrence: {ours / naive:.1f}x; target >= 5,000 pairs/s: "
          f"{'met' if ours >= 5000 else 'NOT met'}")


if __name__ == "__main__":
    main()
