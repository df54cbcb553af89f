"""The ``evaluate`` and ``visualize`` sub-commands: watching and scoring trained agents."""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Sequence

from llmexplore.commands import Handler, command
from llmexplore.errors import ConfigError, shown
from llmexplore.number_input import number_type

DEFAULT_EPISODES = 10
_RANGE = re.compile(r"(\d+)-(\d+)")


def parse_seeds(values: Sequence[str]) -> list[int]:
    """``3``, ``0-9`` (inclusive) or ``0,5,7``, in any mix."""
    seeds: list[int] = []
    for value in values:
        for part in (p.strip() for p in str(value).split(",")):
            if not part:
                continue
            span = _RANGE.fullmatch(part)
            if span and int(span.group(2)) >= int(span.group(1)):
                seeds.extend(range(int(span.group(1)), int(span.group(2)) + 1))
                continue
            try:
                seeds.append(int(part))
            except ValueError:
                raise ConfigError(f"bad seed {shown(part)}", hint="seeds are integers or ranges such as 0-9") from None
    return seeds


def choose_seeds(episodes: int | None, seeds: Sequence[str] | None) -> list[int]:
    """Evaluation seeds: those ``--seeds`` gives, else 0 to N-1 for ``--episodes N`` (``DEFAULT_EPISODES``
    when unset). Raises ConfigError when both are given and disagree, or N < 1."""
    if seeds:
        chosen = parse_seeds(seeds)
        if episodes is not None and episodes != len(chosen):
            raise ConfigError(f"--episodes {episodes} disagrees with the {len(chosen)} seeds given by --seeds",
                              hint="each seed is one episode: give one of the two options, or both in agreement")
        return chosen
    count = DEFAULT_EPISODES if episodes is None else episodes
    if count < 1:
        raise ConfigError(f"--episodes must be at least 1, got {count}")
    return list(range(count))


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (the --out of `llmexplore run`)")
    p.add_argument("--checkpoint", default="latest", help="latest (default), best, or a checkpoint file")
    p.add_argument("--episodes", type=number_type(int, 1, 1_000_000), help=f"number of episodes, seeds 0..N-1 (default {DEFAULT_EPISODES})")
    p.add_argument("--seeds", nargs="+", metavar="SEED", help="evaluation seeds, one episode each (e.g. 0-9 20 21)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--greedy", action="store_true", help="take the most likely action")
    mode.add_argument("--sample", action="store_true", help="sample actions from the policy (default)")
    p.add_argument("--workers", type=number_type(int, 1, 4096), help="worker processes (default: one per CPU core, with at least 8 episodes each)")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _quiet_sample_factory() -> None:
    from llmexplore.agents.sf_env import QUIET_ENV, quiet_sample_factory_console

    os.environ[QUIET_ENV] = "1"
    quiet_sample_factory_console()


@command("evaluate", "play a run's checkpoint on fresh seeds and write an evaluation record")
def _evaluate(p: argparse.ArgumentParser) -> Handler:
    _common(p)
    p.add_argument("--out", help="record file (default: RUN_DIR/eval/<checkpoint>.<greedy|sample>.json)")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.benchmarks.evaluation.run_eval import evaluate

        _quiet_sample_factory()
        seeds = choose_seeds(args.episodes, args.seeds)
        record, path = evaluate(args.run_dir, seeds, checkpoint=args.checkpoint, greedy=args.greedy,
                                workers=args.workers, out=args.out, progress=not args.quiet)
        print(json.dumps({"record": str(path), "episodes": len(record.episodes), "checkpoint": record.checkpoint.path,
                          "action_selection": record.action_selection, record.metric: record.metrics.get(record.metric),
                          "return": record.metrics.get("return"), "intrinsic_return": record.metrics["intrinsic_return"],
                          "steps_per_second": record.timing.steps_per_second}))
        return 0

    return handle


@command("visualize", "replay a run's policy: animations, reward plots, message summaries, an HTML index")
def _visualize(p: argparse.ArgumentParser) -> Handler:
    _common(p)
    p.add_argument("--out", help="output folder (default: RUN_DIR/viz/<checkpoint>.<greedy|sample>)")
    p.add_argument("--format", choices=("gif", "mp4"), help="animation format (default: mp4 with imageio-ffmpeg, else gif)")
    p.add_argument("--fps", type=number_type(float, 0, 1000, low_open=True), default=10.0, help="animation frames per second (default 10)")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.viz.visualize import visualize

        _quiet_sample_factory()
        seeds = choose_seeds(args.episodes, args.seeds)
        index = visualize(args.run_dir, seeds, checkpoint=args.checkpoint, greedy=args.greedy, out=args.out,
                          fmt=args.format, fps=args.fps, workers=args.workers, progress=not args.quiet)
        print(json.dumps({"index": str(index), "episodes": len(seeds)}))
        return 0

    return handle
