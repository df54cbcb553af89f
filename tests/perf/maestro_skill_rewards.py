"""Does each skill's own reward rise while that skill is active? MaestroMotif at a CPU budget.

Builds (or reuses under ``--out``) a pair dataset (random play, or a trained run's with
``--collect-policy``), one oracle-labelled Motif reward model per skill and the oracle's skill
code, then trains the skill-conditioned policy with the intrinsic reward only (c_ext = 0) for
each seed, and reports per skill how its reward changes over training:

* from the learner (what PPO actually optimised), as a curve over ``--windows`` equal shares of the
  budget: each skill's mean return per activation (its reward summed over one call of the skill,
  what it maximises when returns end at hand-overs, the default), the activations that ended, the
  mean r_int per step where the skill acted (Motif's thresholded, count-discounted reward of that
  skill's model) and the skill's share of steps;
* from evaluation episodes (same seeds, sampled actions) of the untrained network (``start``: the
  run's architecture with fresh random weights) and of the final checkpoint (``end``), scored with
  the run's method: r_int per active step, r_int summed per activation (one call of the skill),
  raw r_hat per active step, activations and terminations per episode, episode length, and the
  per-episode intrinsic return.

Nothing is tuned to the outcome; every setting is on the command line and printed with the figures.

    PYTHONPATH=$PWD python tests/perf/maestro_skill_rewards.py --out /tmp/maestro-skills [--steps 300000]
        [--seeds 0 1] [--episodes 8] [--pairs 20000] [--task nethack:maestro-practice] [-o returns=episode]
        [--collect-policy RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from llmexplore.benchmarks.run.cell import run_cell  # noqa: E402
from llmexplore.benchmarks.run.spec import RunSpec  # noqa: E402
from llmexplore.option_input import parse_option_pairs  # noqa: E402
from llmexplore.methods.motif.annotate import annotate_from_config  # noqa: E402
from llmexplore.lm.config import LMConfig  # noqa: E402
from llmexplore.lm.oracle import OracleLM  # noqa: E402
from llmexplore.methods import RewardBatch  # noqa: E402
from llmexplore.methods.maestro.codegen import generate_code, skill_targets, training_target  # noqa: E402
from llmexplore.methods.maestro.skills import SKILLS  # noqa: E402
from llmexplore.methods.motif.artifacts import MANIFEST_FILE  # noqa: E402
from llmexplore.methods.motif.collect import collect_pairs  # noqa: E402
from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model  # noqa: E402


def build_artifacts(out: Path, args: argparse.Namespace) -> tuple[Path, Path]:
    dataset = out / "pairs"
    if not (dataset / "data").is_dir():
        policy = None
        if args.collect_policy:  # a trained run plays, skills and all: rare skills' events show up far more
            from llmexplore.methods.motif.checkpoint_policy import CheckpointPolicy

            policy = CheckpointPolicy.load(args.collect_policy, task=args.task)
        _, stats = collect_pairs(args.task, args.pairs, dataset, seed=0, policy=policy)
        source = f"run {args.collect_policy}" if policy else "random play"
        print(f"collected {args.pairs} pairs with {source}: {stats}", flush=True)
    rewards = out / "rewards"
    for skill in SKILLS:
        folder = rewards / skill
        if not (folder / MANIFEST_FILE).exists():
            report = annotate_from_config(dataset, LMConfig(), goal=skill, version="default")
            options = RewardTrainingOptions(
                lr=args.rm_lr, batch_size=args.rm_batch_size, epochs=args.rm_epochs
            )
            train_reward_model(dataset, Path(report.labels_file).stem, folder, options)
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        print(f"reward model {skill:10s}: held-out non-tie accuracy {manifest['final']['val_accuracy']:.3f}")
    code = out / "code"
    generate_code(code, OracleLM(), skill_targets() + [training_target()])
    return rewards, code


def learner_curve(run_dir: Path, steps: int, windows: int) -> dict[str, list[dict[str, float]]]:
    """Per skill, one entry per window (an equal share of the budget) of the learner's metrics: share of
    steps, mean r_int and raw r_hat per step where the skill acted (weighted by its steps in each report),
    activations that ended, and their mean return (weighted by activations)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    rows = [r for r in rows if "maestro_share_discoverer" in r]
    out: dict[str, list[dict[str, float]]] = {}
    for skill in SKILLS:
        out[skill] = []
        for w in range(windows):
            low, high = w * steps / windows, (w + 1) * steps / windows
            picked = [r for r in rows if low < r["env_steps"] <= high or (w == 0 and r["env_steps"] <= low)]
            values: dict[str, float] = {"share": _mean([r[f"maestro_share_{skill}"] for r in picked])}
            for key, weight in (("reward", "share"), ("rhat", "share"), ("return", "ended")):
                pairs = [(r[f"maestro_{key}_{skill}"], r.get(f"maestro_{weight}_{skill}", 0.0))
                         for r in picked if f"maestro_{key}_{skill}" in r]
                total = sum(w_ for _, w_ in pairs)
                values[key] = sum(v * w_ for v, w_ in pairs) / total if total else float("nan")
            values["ended"] = sum(r.get(f"maestro_ended_{skill}", 0.0) for r in picked)
            out[skill].append(values)
    return out


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def evaluate(run_dir: Path, initial: bool, episodes: int, seed: int) -> dict[str, dict[str, float]]:
    """Per skill (and 'episode'): figures from evaluation episodes, scored with the run's method."""
    from sample_factory.model.actor_critic import create_actor_critic

    from llmexplore.agents.policy import load_policy
    from llmexplore.agents.rollout import play_episode

    policy = load_policy(run_dir)
    if initial:
        torch.manual_seed(seed)
        policy.model = create_actor_critic(policy.cfg, policy.observation_space, policy.action_space)
        policy.model.eval()
    method = policy.make_method()
    env = policy.make_env()
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_activation: dict[str, list[float]] = defaultdict(list)
    lengths, returns = [], []
    try:
        for i in range(episodes):
            trace = play_episode(policy, env, 10_000 + 100 * seed + i, greedy=False)
            obs = {k: torch.as_tensor(v)[None] for k, v in trace.observations.items()}
            dones = torch.zeros(1, trace.length)
            dones[0, -1] = 1.0
            r_int, r_hat, skill = method.scored(RewardBatch(obs, torch.as_tensor(trace.actions)[None], dones))
            r_int, r_hat, skill = r_int[0].numpy(), r_hat[0].numpy(), skill[0].numpy()
            lengths.append(trace.length)
            returns.append(float(r_int.sum()))
            start = 0
            for t in range(1, trace.length + 1):  # activations: maximal runs of one skill
                if t == trace.length or skill[t] != skill[start]:
                    name = SKILLS[int(skill[start])]
                    per_activation[name].append(float(r_int[start:t].sum()))
                    start = t
            for k, name in enumerate(SKILLS):
                mask = skill == k
                live = mask.copy()
                live[-1] = False  # the last transition ended the episode: no reward by construction
                sums[name]["steps"] += float(mask.sum())
                sums[name]["r_int"] += float(r_int[live].sum())
                sums[name]["r_hat"] += float(r_hat[live].sum())
                sums[name]["live"] += float(live.sum())
                sums[name]["terminations"] += trace.stats.get(f"maestro_terminations_{name}", 0.0)
    finally:
        env.close()
    out: dict[str, dict[str, float]] = {}
    for name in SKILLS:
        s = sums[name]
        live = s["live"] or float("nan")
        out[name] = {
            "steps": s["steps"] / episodes,
            "r_int_per_step": s["r_int"] / live,
            "r_hat_per_step": s["r_hat"] / live,
            "activations": len(per_activation[name]) / episodes,
            "r_int_per_activation": _mean(per_activation[name]),
            "terminations": s["terminations"] / episodes,
        }
    out["episode"] = {"length": _mean(lengths), "intrinsic_return": _mean(returns)}
    return out


def fmt(value: float) -> str:
    return "   n/a" if value != value else f"{value:7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True, help="work folder (reused by a rerun)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps per training run")
    parser.add_argument("--task", default="nethack:maestro-score")
    parser.add_argument("--episodes", type=int, default=8, help="evaluation episodes per policy")
    parser.add_argument(
        "--windows", type=int, default=5, help="learner curve: the budget is cut into this many windows"
    )
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--collect-policy", default=None,
                        help="run folder whose latest checkpoint plays while pairs are collected "
                             "(default: random actions)")
    parser.add_argument("--rm-lr", type=float, default=3e-4)
    parser.add_argument("--rm-batch-size", type=int, default=1024)
    parser.add_argument("--rm-epochs", type=int, default=8)
    parser.add_argument("--label", default="default", help="name of this configuration's runs folder")
    parser.add_argument("-o", "--option", action="append", default=[], help="maestro method option KEY=VALUE")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rewards, code = build_artifacts(out, args)
    options = {"reward_models": str(rewards), "code": str(code), **parse_option_pairs(args.option)}
    print(f"artifacts ready in {time.perf_counter() - started:.0f}s; method options {options}", flush=True)
    report = {}
    for seed in args.seeds:
        run_dir = out / "runs" / args.label / f"seed{seed}"
        began = time.perf_counter()
        record = run_cell(
            RunSpec(
                method="maestro",
                task=args.task,
                seed=seed,
                steps=args.steps,
                ext_coef=0.0,
                method_options=options,
            ),
            run_dir,
            quiet=True,
        )
        trained = time.perf_counter() - began
        learner = learner_curve(run_dir, args.steps, args.windows)
        start, end = (
            evaluate(run_dir, True, args.episodes, seed),
            evaluate(run_dir, False, args.episodes, seed),
        )
        report[seed] = {
            "learner": learner,
            "eval_start": start,
            "eval_end": end,
            "steps_per_second": record.steps_per_second,
        }
        print(
            f"\n== seed {seed}: {record.env_steps} env steps at {record.steps_per_second:,.0f}/s "
            f"(train {trained:.0f}s, total {time.perf_counter() - began:.0f}s)"
        )
        print(
            f"   episodes (eval, {args.episodes} each): length {start['episode']['length']:.0f} -> "
            f"{end['episode']['length']:.0f}, intrinsic return {start['episode']['intrinsic_return']:.3f} -> "
            f"{end['episode']['intrinsic_return']:.3f}"
        )
        print("   learner, by window of the budget (first > ... > last):")
        for skill in SKILLS:
            curve = learner[skill]
            returns = " > ".join(fmt(c["return"]) for c in curve)
            ended = " ".join(f"{c['ended']:.0f}" for c in curve)
            per_step = " > ".join(fmt(c["reward"]) for c in curve)
            shares = " ".join(f"{c['share']:.2f}" for c in curve)
            print(f"   {skill:11s} return/activation {returns}   (activations {ended})")
            print(f"   {'':11s} r_int/step        {per_step}   (share {shares})")
        print("   skill       | eval r_int/step  r_int/activation  r_hat/step   activations  terminations"
              "  steps")
        for skill in SKILLS:
            s, e = start[skill], end[skill]
            print(
                f"   {skill:11s} | {fmt(s['r_int_per_step'])}>{fmt(e['r_int_per_step'])} "
                f"{fmt(s['r_int_per_activation'])}>{fmt(e['r_int_per_activation'])} "
                f"{fmt(s['r_hat_per_step'])}>{fmt(e['r_hat_per_step'])} "
                f"{s['activations']:5.1f}>{e['activations']:5.1f} "
                f"{s['terminations']:5.1f}>{e['terminations']:5.1f} "
                f"{s['steps']:6.0f}>{e['steps']:6.0f}",
                flush=True,
            )
    (out / f"report-{args.label}.json").write_text(
        json.dumps({"args": vars(args), "seeds": report}, indent=1, default=float)
    )
    print(f"\nreport: {out / f'report-{args.label}.json'}; {time.perf_counter() - started:.0f}s in all")


if __name__ == "__main__":
    main()
