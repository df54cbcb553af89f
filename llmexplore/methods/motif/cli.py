"""``llmexplore motif ...``: collect a pair dataset, annotate it, train the reward model."""

from __future__ import annotations

import argparse
import json
import time

from llmexplore.atomic import require_output_dir
from llmexplore.commands import Handler, command
from llmexplore.errors import ConfigError, UserError, shown
from llmexplore.lm.arguments import add_lm_arguments, lm_config_from_args
from llmexplore.number_input import number_type, seed_type


def _collect(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--task", help="task to roll out in, of a family with text to judge: NetHack, MiniHack or Crafter "
                                   "(default: the --policy run's task, else nethack:score)")
    p.add_argument("--pairs", type=number_type(int, 1), required=True, help="number of observation pairs N")
    p.add_argument("--out", required=True, help="dataset folder to create (data/, info/, preference/)")
    p.add_argument("--seed", type=seed_type, default=0, help="seed of the rollouts")
    p.add_argument("--envs", type=number_type(int, 1, 4096), default=16, help="environments stepped together")
    g = p.add_argument_group("policy (default: uniform random actions)")
    g.add_argument("--policy", metavar="RUN_DIR", help="roll out a checkpoint of this trained run (any method)")
    g.add_argument("--checkpoint", default="latest", help="with --policy: latest | best | a .pth file")
    g.add_argument("--greedy", action="store_true", help="with --policy: most likely actions instead of sampled ones")

    def handle(args: argparse.Namespace) -> int:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from llmexplore.methods.motif.collect import collect_pairs

        if args.envs < 1:
            raise ConfigError(f"--envs must be at least 1 (got {args.envs})")
        if args.policy is None and (args.checkpoint != "latest" or args.greedy):
            raise ConfigError("--checkpoint and --greedy need --policy RUN_DIR")
        policy = None
        if args.policy is not None:
            from llmexplore.methods.motif.checkpoint_policy import CheckpointPolicy

            policy = CheckpointPolicy.load(args.policy, args.checkpoint, task=args.task, greedy=args.greedy,
                                           seed=args.seed)
        task = policy.task if policy is not None else (args.task or "nethack:score")
        require_output_dir(args.out)
        started = time.perf_counter()
        columns = (TextColumn("collecting observations"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, transient=True) as progress:
            bar = progress.add_task("collect", total=2 * args.pairs)
            dataset, stats = collect_pairs(task, args.pairs, args.out, seed=args.seed, num_envs=args.envs,
                                           policy=policy,
                                           progress=lambda done, total: progress.update(bar, completed=done))
        seconds = time.perf_counter() - started
        print(json.dumps({"dataset": str(dataset.root), "task": task, "pairs": len(dataset),
                          "policy": args.policy or "random", "env_steps": stats.steps, "episodes": stats.episodes,
                          "seconds": round(seconds, 1), "steps_per_second": round(stats.steps / max(seconds, 1e-9))}))
        return 0

    return handle


def _annotate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--dataset", required=True, help="pair dataset folder (data/, info/, preference/)")
    add_annotation_arguments(p)

    def handle(args: argparse.Namespace) -> int:
        return run_annotation(args, args.dataset)

    return handle


def _chunk(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--chunk {shown(text)} must look like K/N, e.g. 0/4") from None
    return k, n


def add_annotation_arguments(p: argparse.ArgumentParser) -> None:
    """Options of an annotation job (goal, prompt version, chunk, LM); shared by `lm annotate` and `motif annotate`."""
    p.add_argument("--goal", default="defaultgoal",
                   help="defaultgoal | zeroknowledge | combat | gold | stairs, minihack (a MiniHack level's "
                        "staircase), or a MaestroMotif skill: discoverer | descender | ascender | worshipper | merchant "
                        "(Crafter pairs: defaultgoal | zeroknowledge)")
    p.add_argument("--version", default="default", help="prompt version: default | reworded")
    p.add_argument("--annotator", help="annotator name in the label file name (default: from the model, "
                                       "e.g. llmexplore-oracle-6 for the oracle)")
    p.add_argument("--chunk", default="0/1", help="K/N: label the K-th of N equal slices (default 0/1)")
    p.add_argument("--batch-size", type=number_type(int, 1), default=128, help="pairs asked per LM call")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    add_lm_arguments(p)


def run_annotation(args: argparse.Namespace, dataset: str) -> int:
    """Run the annotation job the parsed options describe; print its report as one JSON line.

    The report's ``annotation`` is the label file's name, the value `motif train-reward
    --annotation` takes.
    """
    from pathlib import Path

    from llmexplore.methods.motif.annotate import annotate_from_config

    if args.batch_size < 1:
        raise ConfigError("--batch-size must be at least 1")
    config = lm_config_from_args(args)
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # a scheduler's stop ends the job as Ctrl-C does
    try:
        report = annotate_from_config(dataset, config, goal=args.goal, version=args.version,
                                      annotator=args.annotator, chunk=_chunk(args.chunk),
                                      batch_size=args.batch_size, progress=not args.quiet)
    except KeyboardInterrupt:
        raise UserError("annotation interrupted: the labels written so far are saved and every answer "
                        "received is in the LM cache", hint="rerun the same command to finish; nothing is "
                        "asked of the model twice") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(json.dumps({"annotation": Path(report.labels_file).stem, **report.as_dict()}), flush=True)
    return 0


def _train_reward(p: argparse.ArgumentParser) -> Handler:
    from llmexplore.methods.motif.training import RewardTrainingOptions

    defaults = RewardTrainingOptions()
    p.add_argument("--dataset", required=True, help="pair dataset folder")
    p.add_argument("--annotation", required=True, help="preference file name, e.g. llama70b_msg_defaultgoal_default")
    p.add_argument("--out", required=True, help="reward-model folder (created; rerunning resumes)")
    p.add_argument("--lr", type=number_type(float, 0, 1, low_open=True), default=defaults.lr, help="learning rate")
    p.add_argument("--batch-size", type=number_type(int, 1), default=defaults.batch_size, help="pairs per step")
    p.add_argument("--epochs", type=number_type(int, 1, 100_000), default=defaults.epochs, help="passes over the training pairs")
    p.add_argument("--val-fraction", type=number_type(float, 0, 1, low_open=True), default=defaults.val_fraction, help="share of pairs held out for validation")
    p.add_argument("--seed", type=seed_type, default=defaults.seed, help="training seed")
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default=defaults.device,
                   help="where the reward model trains (auto: cuda when available)")
    p.add_argument("--unknown", choices=("drop", "tie"), default=defaults.unknown,
                   help="unknown labels (3): drop them as the published code does (default), or count them as "
                        "ties (on a finished annotation)")
    p.add_argument("--threads", type=number_type(int, 1, 1024), default=defaults.threads,
                   help="CPU threads for torch (default 1: fastest on a small or shared machine)")

    def handle(args: argparse.Namespace) -> int:
        from pydantic import ValidationError
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from llmexplore.errors import format_validation_error
        from llmexplore.methods.motif.training import train_reward_model

        require_output_dir(args.out)
        try:
            options = RewardTrainingOptions(lr=args.lr, batch_size=args.batch_size, epochs=args.epochs,
                                            val_fraction=args.val_fraction, seed=args.seed, device=args.device,
                                            threads=args.threads, unknown=args.unknown)
        except ValidationError as exc:
            raise ConfigError("bad training options: " + format_validation_error(exc)) from None
        console = Console()
        with Progress(TextColumn("epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
                      console=console, transient=True) as progress:
            bar = progress.add_task("train", total=None, epoch=0)

            def on_batch(epoch: int, batch: int, batches: int) -> None:
                progress.update(bar, completed=batch, total=batches, epoch=f"{epoch}/{options.epochs}")

            def on_epoch(row: dict) -> None:
                progress.console.print(
                    f"epoch {row['epoch']:>3}  train loss {row['train_loss']:.4f}  acc {row['train_accuracy']:.3f}  "
                    f"| val loss {row['val_loss']:.4f}  acc {row['val_accuracy']:.3f}  "
                    f"score agreement {row['val_score_agreement']:.3f}  | {row['pairs_per_second']:,.0f} pairs/s")

            manifest = train_reward_model(args.dataset, args.annotation, args.out, options, on_epoch, on_batch)
        print(json.dumps({"reward_model": args.out, **manifest}))
        return 0

    return handle


_SUBCOMMANDS = {
    "collect": ("roll out a policy (random, or a trained run's checkpoint) in a NetHack, MiniHack or Crafter task "
                "and write a pair dataset of its messages (Crafter: captions)", _collect),
    "annotate": ("label a pair dataset with an LM's preferences for a goal and prompt version (resumable; "
                 "the same job as `llmexplore lm annotate`)", _annotate),
    "train-reward": ("train Motif's reward model on a labelled pair dataset", _train_reward),
}


@command("motif", "Motif: collect pair datasets, annotate them with an LM, train reward models")
def _motif(p: argparse.ArgumentParser) -> Handler:
    sub = p.add_subparsers(dest="motif_command", required=True, metavar="STEP")
    handlers: dict[str, Handler] = {}
    for name, (help_text, setup) in _SUBCOMMANDS.items():
        handlers[name] = setup(sub.add_parser(name, help=help_text, description=help_text))

    def handle(args: argparse.Namespace) -> int:
        return handlers[args.motif_command](args)

    return handle
