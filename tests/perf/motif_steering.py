"""Does the goal in Motif's prompt steer the agent? Gold-goal agents vs combat-goal agents.

Motif's claim (Klissarov et al., 2023, steering by prompt): the same pipeline with a different
goal sentence in the annotation prompt gives agents that behave differently. This benchmark
checks it at a budget a CPU affords:

1. one pair dataset (``motif collect``: random actions, ``--policy RUN_DIR``, or with
   ``--policy-steps N`` a ``none`` agent this script first trains on the task for N env steps;
   the published dataset came from agents trained on score: random play shows kills and gold
   pickups too rarely for the reward models to learn them),
2. per goal: the oracle labels it through the LM layer's annotation job, and a reward model
   is trained on the labels,
3. per goal and seed: RL with ``motif`` on nethack:score, intrinsic reward only by default
   (``--ext-coef 0``) so that the reward model alone drives behaviour,
4. per run: the final checkpoint plays ``--episodes`` fresh evaluation seeds (sampled
   actions, ``llmexplore evaluate``'s machinery); we read gold (carried at the end) and kills
   ("You kill/destroy" announcements) from the episode stats. The training episodes of the
   last quarter of the budget are summarised the same way as a second view.

Printed per goal: mean ± standard error over seeds of the per-run mean gold and kills per episode
(the claim), of their interquartile means over the run's episodes (a rare gold pile of hundreds
of pieces sways a mean of 20 episodes) and per 1,000 env steps (a second view, as episode lengths
vary several-fold), and the per-run numbers. Nothing is tuned to the outcome: the settings are the
command line's.
Everything lands under ``--out`` and a rerun resumes (finished parts are reused).

    PYTHONPATH=$PWD python tests/perf/motif_steering.py --out /tmp/steer [--steps 300000] [--seeds 0 1]
        [--policy-steps 1000000 | --policy RUN_DIR] [--pairs 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmexplore.benchmarks.run.cell import run_cell  # noqa: E402
from llmexplore.benchmarks.evaluation.run_eval import evaluate  # noqa: E402
from llmexplore.benchmarks.run.spec import RunSpec  # noqa: E402
from llmexplore.benchmarks.results.statistics import (  # noqa: E402
    interval_meaning, interval_name, iqm, mean_and_se, probability_of_improvement,
    probability_of_improvement_ci, stratified_bootstrap_ci,
)
from llmexplore.methods.motif.annotate import annotate_from_config  # noqa: E402
from llmexplore.lm.config import LMConfig  # noqa: E402
from llmexplore.methods.motif.artifacts import MANIFEST_FILE  # noqa: E402
from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model  # noqa: E402

STATS = ("gold", "kills")


def reward_model(out: Path, dataset: Path, goal: str, args: argparse.Namespace) -> Path:
    report = annotate_from_config(dataset, LMConfig(), goal=goal, version="default")
    annotation = Path(report.labels_file).stem
    folder = out / f"rm-{goal}"
    if not (folder / MANIFEST_FILE).exists():
        options = RewardTrainingOptions(lr=args.rm_lr, batch_size=args.rm_batch_size, epochs=args.rm_epochs)
        train_reward_model(dataset, annotation, folder, options)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    print(f"reward model {goal}: labels {report.counts}, held-out non-tie accuracy "
          f"{manifest['final']['val_accuracy']:.3f}", flush=True)
    return folder.resolve()  # runs record the real path: an --out assembled by links reuses them


def mean_stats(episodes: list[dict]) -> dict[str, float]:
    """Per-episode means; their interquartile means, as one episode that finds a gold pile (hundreds of
    pieces) outweighs the other nineteen; and per-1,000-step rates: gold and kills at an episode's end
    grow with its length, and lengths vary several-fold between runs, so the rates separate goal from
    survival."""
    if not episodes:
        return {}
    steps = sum(float(e["length"]) for e in episodes)
    means = {k: statistics.fmean(float(e[k]) for e in episodes) for k in STATS + ("length",)}
    iqms = {f"{k}_iqm": iqm([float(e[k]) for e in episodes]) for k in STATS}
    return means | iqms | {f"{k}_per_1k": 1000 * sum(float(e[k]) for e in episodes) / steps for k in STATS}


def training_tail(run_dir: Path, steps: int) -> dict[str, float]:
    """Episodes that ended in the last quarter of the budget."""
    rows = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines() if line]
    tail = [r for r in rows if r.get("env_steps", 0) > 0.75 * steps]
    return {**mean_stats(tail), "episodes": len(tail)}


def evaluation_stats(run_dir: Path, episodes: int, env_steps: int) -> list[dict]:
    """Episode stats of the final checkpoint on seeds 0..episodes-1: read back from an earlier
    evaluation of that checkpoint on those seeds, else played (``evaluate`` resumes only a cut-off
    evaluation, and a summary over many runs should not replay them all)."""
    seeds = list(range(episodes))
    for path in sorted((run_dir / "eval").glob("*.sample.json")):
        done = json.loads(path.read_text())
        if done.get("seeds") == seeds and done.get("checkpoint", {}).get("env_steps") == env_steps:
            return [e["stats"] for e in done["episodes"]]
    evaluation, _ = evaluate(run_dir, seeds, workers=1, progress=False)
    return [e.stats for e in evaluation.episodes]


def mean_se(values: list[float]) -> str:
    mean, se = mean_and_se(values)
    return f"{mean:6.2f} ± {se:4.2f}"


def leaderboard_view(results: dict[str, list[dict]], view: str = "eval") -> dict[str, dict]:
    """The leaderboard's statistics over seeds (one value per run: its ``view`` mean per episode and per
    1,000 steps): per goal the interquartile mean with a stratified-bootstrap interval, and per statistic
    P(goal A > goal B) with its interval, for every ordered pair of goals. Intervals are named as the
    leaderboard names them (a 95% CI only from 5 runs per goal)."""
    keys = [*STATS, *(f"{k}_per_1k" for k in STATS)]
    values = {goal: {k: [r[view][k] for r in rows] for k in keys} for goal, rows in results.items()}
    runs = min(len(rows) for rows in results.values())
    summary: dict[str, dict] = {"interval": interval_name([runs]), "runs_per_goal": runs, "goals": {}, "p_better": {}}
    for goal, by_key in values.items():
        summary["goals"][goal] = {k: (iqm(v), *stratified_bootstrap_ci([v])) for k, v in by_key.items()}
    for a, by_key_a in values.items():
        for b, by_key_b in values.items():
            if a != b:
                summary["p_better"][f"{a} > {b}"] = {
                    k: (probability_of_improvement([by_key_a[k]], [by_key_b[k]]),
                        *probability_of_improvement_ci([by_key_a[k]], [by_key_b[k]])) for k in keys}
    return summary


def print_leaderboard_view(summary: dict[str, dict]) -> None:
    """The summary as the leaderboard prints it: point [low, high], with the interval's name and meaning."""
    name, runs = summary["interval"], summary["runs_per_goal"]
    print(f"\nthe leaderboard's statistics over seeds (evaluation episodes; IQM of the runs' means, {name}):")
    for goal, cells in summary["goals"].items():
        print(f"{goal:>8} | " + "  ".join(f"{k} {v:.2f} [{lo:.2f}, {hi:.2f}]" for k, (v, lo, hi) in cells.items()))
    for pair, cells in summary["p_better"].items():
        print(f"P({pair}) | " + "  ".join(f"{k} {v:.2f} [{lo:.2f}, {hi:.2f}]" for k, (v, lo, hi) in cells.items()))
    if name != "95% CI":
        print(interval_meaning(runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="work folder (reused by a rerun)")
    parser.add_argument("--goals", nargs="+", default=["gold", "combat"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps per RL run")
    parser.add_argument("--ext-coef", type=float, default=0.0, help="c_ext (0: intrinsic reward only)")
    parser.add_argument("--task", default="nethack:score")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes per run")
    parser.add_argument("--pairs", type=int, default=50_000, help="pairs to collect")
    parser.add_argument("--policy", help="collect with this run's checkpoint (default: random actions)")
    parser.add_argument("--policy-steps", type=int, default=0,
                        help="without --policy: first train a `none` agent for this many env steps and collect "
                             "with it")
    parser.add_argument("--rm-lr", type=float, default=3e-4)
    parser.add_argument("--rm-batch-size", type=int, default=1024)
    parser.add_argument("--rm-epochs", type=int, default=10)
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    dataset = out / "pairs"
    if not args.policy and args.policy_steps > 0:
        collector = out / "collector"
        record = run_cell(RunSpec(method="none", task=args.task, seed=0, steps=args.policy_steps), collector,
                          quiet=True)
        print(f"collection policy: none on {args.task}, {record.env_steps} env steps", flush=True)
        args.policy = str(collector)
    if not (dataset / "data").is_dir():
        policy = None
        if args.policy:
            from llmexplore.methods.motif.checkpoint_policy import CheckpointPolicy

            policy = CheckpointPolicy.load(args.policy, task=args.task)
        collect_pairs(args.task, args.pairs, dataset, seed=0, policy=policy)
    models = {goal: reward_model(out, dataset, goal, args) for goal in args.goals}

    results: dict[str, list[dict]] = {goal: [] for goal in args.goals}
    for seed in args.seeds:  # seed-major: an interrupted benchmark has every goal at the same seeds
        for goal in args.goals:
            run_dir = out / "runs" / goal / f"seed{seed}"
            spec = RunSpec(method="motif", task=args.task, seed=seed, steps=args.steps, ext_coef=args.ext_coef,
                           method_options={"reward_model": str(models[goal])}, label=f"motif-{goal}")
            began = time.perf_counter()
            record = run_cell(spec, run_dir, quiet=True)
            if record.status != "complete":  # Ctrl-C stops a run at a checkpoint: no evaluation of a cut run
                print(f"{goal:>7} seed {seed}: {record.status} at {record.env_steps:,} of {args.steps:,} env steps; "
                      "rerun the same command to resume", flush=True)
                return 130 if record.status == "interrupted" else 1
            episodes = evaluation_stats(run_dir, args.episodes, record.env_steps)
            row = {"seed": seed, "steps_per_second": record.steps_per_second, "eval": mean_stats(episodes),
                   "train_tail": training_tail(run_dir, args.steps)}
            results[goal].append(row)
            print(f"{goal:>7} seed {seed}: {record.env_steps} steps at {record.steps_per_second:,.0f}/s; eval "
                  + ", ".join(f"{k} {v:.2f}" for k, v in row["eval"].items())
                  + f"; training tail ({row['train_tail'].get('episodes', 0)} episodes) "
                  + ", ".join(f"{k} {row['train_tail'][k]:.2f}" for k in STATS if k in row["train_tail"])
                  + f"  [{time.perf_counter() - began:.0f} s]", flush=True)

    print(f"\nsteering on {args.task}, c_ext {args.ext_coef}, c_int 0.1, {args.steps:,} env steps per run, "
          f"seeds {args.seeds}, {args.episodes} evaluation episodes per run; {len(args.goals) * len(args.seeds)} "
          f"runs in {time.perf_counter() - started:,.0f} s (this process)")
    views = (("mean per episode", STATS), ("interquartile mean per episode", [f"{k}_iqm" for k in STATS]),
             ("per 1,000 env steps", [f"{k}_per_1k" for k in STATS]))
    for title, keys in views:
        print(f"mean ± s.e. over seeds of each run's {title}")
        print(f"{'goal':>8} | {'eval gold':>14} {'eval kills':>14} | {'train gold':>14} {'train kills':>14}")
        for goal, rows in results.items():
            cells = [mean_se([r[view][k] for r in rows]) for view in ("eval", "train_tail") for k in keys]
            print(f"{goal:>8} | {cells[0]:>14} {cells[1]:>14} | {cells[2]:>14} {cells[3]:>14}")
    summary = leaderboard_view(results)
    print_leaderboard_view(summary)
    (out / "steering.json").write_text(json.dumps({"args": vars(args), "results": results,
                                                   "leaderboard_statistics": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
