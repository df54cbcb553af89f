"""What the ``motif`` reward costs in RL training, against ``none`` on the same task.

After one warm-up run, runs ``run_cell`` for none and motif on nethack:score at a small
budget in alternating order (none-motif, motif-none, ...) so both see similar machine load,
and prints the median training speed of each, the median of per-repeat ratios, the time
of one ``Motif.reward`` call on a learner-sized batch, and the share of distinct messages
per learner batch the motif method reported. Without --reward-model a small one is trained first
(oracle labels from the annotation job; its quality does not matter for speed).

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

from llmexplore.benchmarks.run.cell import run_cell  # noqa: E402
from llmexplore.benchmarks.run.spec import RunSpec  # noqa: E402
from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model  # noqa: E402
from tests.helpers.motif import ORACLE_ANNOTATION, label_with_oracle  # noqa: E402


def quick_reward_model(folder: Path) -> Path:
    ds, _ = collect_pairs("nethack:score", 5000, folder / "pairs", seed=0)
    label_with_oracle(folder / "pairs")
    options = RewardTrainingOptions(lr=1e-3, batch_size=256, epochs=2, threads=1)
    train_reward_model(folder / "pairs", ORACLE_ANNOTATION, folder / "rm", options)
    return folder / "rm"


def reward_call_seconds(model: Path, pairs: Path | None, calls: int = 50) -> tuple[float, float]:
    """Median seconds of one ``Motif.reward`` call on a learner-sized batch (64 x 32 steps of
    collected messages, cache warm), and that batch's distinct-message share."""
    import numpy as np
    import torch

    from llmexplore.envs import get_task
    from llmexplore.envs.wrappers import EPISODIC_MESSAGE_COUNT_KEY
    from llmexplore.methods import MethodContext, RewardBatch, get_method, parse_options
    from llmexplore.methods.motif.dataset import open_pair_dataset

    messages = np.asarray(open_pair_dataset(pairs).messages).reshape(-1, 256)
    rng = np.random.default_rng(0)
    cls = get_method("motif")
    method = cls(parse_options(cls, {"reward_model": str(model)}),
                 MethodContext(task=get_task("nethack:score"), seed=0, run_dir=Path(".")), None)
    times, shares = [], []
    for i in range(calls + 5):
        start = rng.integers(0, len(messages) - 64 * 33)
        obs = {"message": torch.from_numpy(messages[start : start + 64 * 33].reshape(64, 33, 256).copy()),
               EPISODIC_MESSAGE_COUNT_KEY: torch.from_numpy(rng.integers(1, 4, (64, 33, 1)).astype(np.float32))}
        dones = torch.from_numpy((rng.random((64, 32)) < 0.01).astype(np.float32))
        batch = RewardBatch(obs=obs, actions=torch.zeros(64, 32), dones=dones)
        began = time.perf_counter()
        method.reward(batch)
        if i >= 5:
            times.append(time.perf_counter() - began)
            shares.append(method.metrics()["motif_distinct_share"])
    return statistics.median(times), statistics.median(shares)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reward-model", help="a trained reward-model folder (default: train a small one)")
    parser.add_argument("--pairs", help="pair dataset for the per-call measurement (default: the one collected)")
    args = parser.parse_args()
    if args.reward_model and not args.pairs:
        parser.error("--reward-model needs --pairs (a dataset for the per-call measurement)")

    speeds: dict[str, list[float]] = {"none": [], "motif": []}
    shares: list[float] = []
    in_run_share: list[float] = []  # reward() time / wall time per batch, inside the motif runs
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = Path(args.reward_model) if args.reward_model else quick_reward_model(tmp)
        pairs = Path(args.pairs) if args.pairs else tmp / "pairs"
        # the first run of a process pays one-off start-up costs: pay them outside the measurement
        run_cell(RunSpec(method="none", task="nethack:score", seed=99, steps=4096), tmp / "warm-up", quiet=True)
        for rep in range(args.repeats):
            for method in ("none", "motif") if rep % 2 == 0 else ("motif", "none"):
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
                            batch_ms = 1000 * 2048 / record.steps_per_second
                            in_run_share.append(row["motif_reward_ms_per_batch"] / batch_ms)
        call_seconds, call_share = reward_call_seconds(model, pairs)
    none, motif = statistics.median(speeds["none"]), statistics.median(speeds["motif"])
    paired = statistics.median(m / n for m, n in zip(speeds["motif"], speeds["none"]))
    print(f"median training speed: none {none:,.0f} steps/s, motif {motif:,.0f} steps/s "
          f"(ratio of medians {motif / none:.3f})")
    print(f"median of per-repeat ratios motif / none (robust to load changing between repeats): {paired:.3f} "
          f"-> cost {100 * (1 - paired):.1f}% of training speed; target <= 15%")
    batch_seconds = 2048 / none
    print(f"one motif reward call on a 64 x 32 batch: median {1000 * call_seconds:.2f} ms (distinct share "
          f"{call_share:.3f}) = {100 * call_seconds / batch_seconds:.2f}% of a 2048-step batch at none's speed")
    if in_run_share:
        print(f"inside the motif runs, reward() took a median {100 * statistics.median(in_run_share):.2f}% of the "
              f"wall time per 2048-step batch")
    if shares:
        print(f"distinct messages per learner batch in the motif runs: median share {statistics.median(shares):.3f} "
              f"(min {min(shares):.3f}, max {max(shares):.3f}, {len(shares)} reports)")


if __name__ == "__main__":
    main()
