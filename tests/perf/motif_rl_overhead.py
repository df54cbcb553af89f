"""What the ``motif`` reward costs in RL training, against ``none`` on the same task.

Runs ``run_cell`` for none and motif on nethack:score at a small budget, alternating
(none, motif, none, motif, ...) so both see the same machine load, and prints the median
training speed of each, their ratio, and the share of distinct messages per learner batch
the motif method reported. Without --reward-model a small one is trained first (rule
labels; its quality does not matter for speed).

    PYTHONPATH=$PWD python tests/perf/motif_rl_overhead.py [--steps 30000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmexplore.benchmarks.cell import run_cell  # noqa: E402
from llmexplore.benchmarks.spec import RunSpec  # noqa: E402
from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model  # noqa: E402
from tests.helpers.motif import RULE_ANNOTATION, label_with_rule  # noqa: E402


def quick_reward_model(folder: Path) -> Path:
    ds, _ = collect_pairs("nethack:score", 5000, folder / "pairs", seed=0)
    label_with_rule(ds)
    options = RewardTrainingOptions(lr=1e-3, batch_size=256, epochs=2, threads=1)
    train_reward_model(folder / "pairs", RULE_ANNOTATION, folder / "rm", options)
    return folder / "rm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--reward-model", help="a trained reward-model folder (default: train a small one)")
    args = parser.parse_args()

    speeds: dict[str, list[float]] = {"none": [], "motif": []}
    shares: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = Path(args.reward_model) if args.reward_model else quick_reward_model(tmp)
        for rep in range(args.repeats):
            for method in ("none", "motif"):
                options = {"reward_model": str(model)} if method == "motif" else {}
                spec = RunSpec(method=method, task="nethack:score", seed=rep, steps=args.steps, method_options=options)
                out = tmp / f"{method}-{rep}"
                started = time.perf_counter()
                record = run_cell(spec, out, quiet=True)
                wall = time.perf_counter() - started
                speeds[method].append(record.steps_per_second)
                print(f"{method:>5} rep {rep}: {record.env_steps} steps, {record.steps_per_second:,.0f} steps/s "
                      f"(record), {wall:.1f} s wall")
                if method == "motif":
                    for line in (out / "metrics.jsonl").read_text().splitlines():
                        row = json.loads(line)
                        if "motif_distinct_share" in row:
                            shares.append(row["motif_distinct_share"])
    none, motif = statistics.median(speeds["none"]), statistics.median(speeds["motif"])
    print(f"median training speed: none {none:,.0f} steps/s, motif {motif:,.0f} steps/s")
    print(f"ratio motif / none: {motif / none:.3f} (cost {100 * (1 - motif / none):.1f}% of training speed; "
          f"target <= 15%)")
    if shares:
        print(f"distinct messages per learner batch: median share {statistics.median(shares):.3f} "
              f"(min {min(shares):.3f}, max {max(shares):.3f}, {len(shares)} reports)")


if __name__ == "__main__":
    main()
