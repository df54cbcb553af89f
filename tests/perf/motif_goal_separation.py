"""How far apart do Motif's steering goals put their labels and reward models? Oracle rules 4 vs 5.

Rules version 5 gave the goals Motif's exclusions (combat never prefers gold or going down,
gold never prefers fights, kills, levels or going down, stairs never prefers fights, kills,
levels or gold). This is the label- and reward-model-level part of the steering benchmark
(``motif_steering.py`` adds RL on top, which a 2-core machine cannot afford often):

1. one pair dataset (``motif collect``: random actions by default, or ``--dataset DIR``),
2. per rules version and goal: the oracle's label of every pair, computed with that version's
   weights (version 4's are version 5's with the exclusions undone), saved beside the
   dataset's other labels,
3. printed per version: the share of labels each goal changed from version 4, and per pair of
   goals the share of pairs (messages not identical) on which the two goals' labels differ,
4. per version and goal: a reward model trained on the labels (``--rm-epochs``, ``--rm-lr``);
   printed: the z-scored reward of probe messages (gold, a kill, a hit, a staircase, going down).

    PYTHONPATH=$PWD python tests/perf/motif_goal_separation.py --out /tmp/separation [--pairs 50000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmexplore.envs.nethack.text import encode_message  # noqa: E402
from llmexplore.envs.nethack import oracle as rules  # noqa: E402
from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.dataset import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, open_pair_dataset  # noqa: E402
from llmexplore.methods.motif.scorer import RewardScorer  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model  # noqa: E402

GOALS = ("gold", "combat", "stairs")
#: what version 5 changed: (goal, event) -> version 4's weight
VERSION_4 = {("combat", "descend"): 0.5, ("gold", "stairs_down"): 0.5, ("gold", "descend"): 0.5,
             ("stairs", "kill"): 0.5, ("stairs", "level_up"): 0.5, ("stairs", "gold"): 0.5}
PROBES = ("$ - 5 gold pieces.", "You kill the newt!", "You hit the jackal.", "There is a staircase down here.",
          "You climb down the stairs.", "Welcome to experience level 2.", "")


def weights(version: int) -> dict[str, dict[str, float]]:
    table = {goal: dict(w) for goal, w in rules.WEIGHTS.items()}
    if version == 4:
        for (goal, event), value in VERSION_4.items():
            table[goal][event] = value
    return table


def label(first: str, second: str, table: dict[str, float]) -> int:
    """The oracle's preference rule (``preference_answer``) with a given weight table."""
    def value(message: str) -> float:
        return sum(table[e] for e in rules.message_events(message) if e in table)

    v1, v2 = value(first), value(second)
    if abs(v1 - v2) < rules.TIE_MARGIN:
        return LABEL_TIE
    return LABEL_FIRST if v1 > v2 else LABEL_SECOND


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dataset", help="an existing pair dataset (default: collect one with random actions)")
    p.add_argument("--pairs", type=int, default=50_000)
    p.add_argument("--rm-epochs", type=int, default=10)
    p.add_argument("--rm-lr", type=float, default=1e-3)
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    dataset = Path(args.dataset) if args.dataset else out / "pairs"
    if not (dataset / "data").exists():
        collect_pairs("nethack:score", args.pairs, dataset, seed=0, num_envs=8)
    ds = open_pair_dataset(dataset)
    captions = [ds.captions(range(i, min(i + 10_000, len(ds)))) for i in range(0, len(ds), 10_000)]
    pairs = [pair for chunk in captions for pair in chunk]
    differ = np.array([a != b for a, b in pairs])
    print(f"{len(pairs)} pairs ({differ.sum()} with different messages), {time.perf_counter() - started:.0f} s")

    labels: dict[tuple[int, str], np.ndarray] = {}
    for version in (4, 5):
        table = weights(version)
        for goal in GOALS:
            labels[version, goal] = np.array([label(a, b, table[goal]) for a, b in pairs], dtype=np.uint8)
            np.save(ds.preference_dir / f"rules-v{version}_msg_{goal}_default.npy", labels[version, goal])
    for goal in GOALS:
        changed = np.mean(labels[4, goal] != labels[5, goal])
        counts = np.bincount(labels[5, goal], minlength=3)
        print(f"{goal:7s} labels changed by version 5: {100 * changed:.2f}%  (version 5: first {counts[0]}, "
              f"second {counts[1]}, tie {counts[2]})")
    for version in (4, 5):
        for i, g1 in enumerate(GOALS):
            for g2 in GOALS[i + 1:]:
                disagree = np.mean(labels[version, g1][differ] != labels[version, g2][differ])
                print(f"version {version}: {g1} vs {g2} labels differ on {100 * disagree:.2f}% of pairs")

    print("\nz-scored reward of probe messages")
    print("| version | goal | " + " | ".join(f'"{m}"' for m in PROBES) + " |")
    probes = np.stack([encode_message(m) for m in PROBES])
    for version in (4, 5):
        for goal in GOALS:
            folder = out / f"rm-v{version}-{goal}"
            if not (folder / "manifest.json").exists():
                train_reward_model(dataset, f"rules-v{version}_msg_{goal}_default", folder,
                                   RewardTrainingOptions(lr=args.rm_lr, epochs=args.rm_epochs, threads=1))
            z = RewardScorer(str(folder), eps_quantile=0.0).normalized(probes)
            print(f"| {version} | {goal} | " + " | ".join(f"{v:.2f}" for v in z) + " |")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
