"""``llmexplore maestro ...``: generate and check skill code, list tasks, evaluate zero-shot.

Reward models come from the Motif commands with the skill names as goals (``motif annotate
--goal descender``); training is ``llmexplore run --method maestro``; scripts/maestro_pipeline.sh
runs everything in order.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from llmexplore.atomic import require_output_dir
from llmexplore.commands import Handler, command
from llmexplore.number_input import number_type, seed_type


def _skills_arg(text: str) -> tuple[str, ...]:
    from llmexplore.methods.maestro.skills import check_skills

    return check_skills([s.strip() for s in text.split(",") if s.strip()])


def _generate(p: argparse.ArgumentParser) -> Handler:
    from llmexplore.lm.arguments import add_lm_arguments
    from llmexplore.methods.maestro.skills import SKILLS

    p.add_argument("--out", required=True, help="code folder (created; rerunning keeps what passed)")
    p.add_argument("--skills", default=",".join(SKILLS), help="comma-separated skills (default: all five)")
    p.add_argument("--tasks", default="none",
                   help="policies over skills for zero-shot tasks too: none (default), all, or a "
                        "comma-separated list")
    add_lm_arguments(p)

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.lm.backends import make_lm
        from llmexplore.lm.arguments import lm_config_from_args
        from llmexplore.methods.maestro.codegen import (generate_code, skill_targets, task_target,
                                                        training_target)
        from llmexplore.methods.maestro.tasks import get_zero_shot_task, zero_shot_tasks

        skills = _skills_arg(args.skills)
        config = lm_config_from_args(args)
        targets = skill_targets(skills) + [training_target(skills)]
        if args.tasks in ("none", "all"):
            names = sorted(zero_shot_tasks()) if args.tasks == "all" else []
        else:
            names = [t.strip() for t in args.tasks.split(",") if t.strip()]
        for name in names:
            task = get_zero_shot_task(name)
            targets.append(task_target(task.name, task.prompt))
        out = require_output_dir(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with make_lm(config, cache_dir=out) as lm:
            manifest = generate_code(out, lm, targets, prompts=config.prompts,
                                     progress=lambda t, status: print(f"{t.path}: {status}", flush=True))
        files = {t.path: manifest["files"][t.path]["attempts"] for t in targets}
        print(json.dumps({"code": str(out), "files": files}))
        return 0

    return handle


def _check(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", help="a Python file of generated code")
    p.add_argument("--function", required=True, choices=("initiation", "termination", "select_skill"),
                   help="the function the file must define")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.errors import ConfigError
        from llmexplore.methods.maestro.checking import check_code
        from llmexplore.methods.maestro.skills import FUNCTIONS

        from llmexplore.yaml_input import read_text

        path = Path(args.file)
        if not path.is_file():
            raise ConfigError(f"no file {path}")
        check_code(read_text(path, "Python file"), (FUNCTIONS[args.function],), name=str(path))
        print(json.dumps({"file": str(path), "function": args.function, "valid": True}))
        return 0

    return handle


def _tasks(p: argparse.ArgumentParser) -> Handler:
    def handle(args: argparse.Namespace) -> int:
        from llmexplore.methods.maestro.tasks import ZERO_SHOT_MODULE, zero_shot_tasks

        tasks = zero_shot_tasks()
        if not tasks:
            print(f"no zero-shot tasks installed ({ZERO_SHOT_MODULE} is missing)")
        for name, task in sorted(tasks.items()):
            print(f"{name:20s} {task.category:12s} {task.task:30s} {' '.join(task.prompt.split())}")
        return 0

    return handle


def _evaluate(p: argparse.ArgumentParser) -> Handler:
    from llmexplore.lm.arguments import add_lm_arguments

    p.add_argument("--task", required=True,
                   help="zero-shot task name (`llmexplore maestro tasks` lists them)")
    p.add_argument("--run", required=True, help="run directory of a `llmexplore run --method maestro` run")
    p.add_argument("--episodes", type=number_type(int, 1, 1_000_000), default=20,
                   help="episodes to play, one per evaluation seed")
    p.add_argument("--out", help="also write the result JSON to this file")
    p.add_argument("--checkpoint", default="latest", help="latest | best | a .pth file")
    p.add_argument("--greedy", action="store_true", help="most likely actions instead of sampled ones")
    p.add_argument("--seed", type=seed_type, default=0, help="first evaluation seed")
    p.add_argument("--metric", choices=("count", "success"), default="count",
                   help="interaction tasks: count = mean events per episode over episodes that saw a "
                        "shop/altar (published); success = success rate over all episodes")
    p.add_argument("--code",
                   help="code folder (default: the run's); the task's policy is generated there if missing")
    add_lm_arguments(p)

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.lm.arguments import lm_config_from_args
        from llmexplore.methods.maestro.zero_shot_eval import evaluate_task

        result = evaluate_task(args.run, args.task, args.episodes, checkpoint=args.checkpoint,
                               greedy=args.greedy, seed=args.seed, lm=lm_config_from_args(args),
                               code=args.code, out=args.out, metric=args.metric)
        summary = {k: v for k, v in result.items() if k != "episodes_detail"}
        print(json.dumps(summary), flush=True)
        return 0

    return handle


_SUBCOMMANDS = {
    "generate": ("ask an LM for each skill's initiation and termination code and the training-time policy "
                 "over skills (and task policies); check it, regenerate once with the reason, save it",
                 _generate),
    "check": ("validate a file of generated code the way `generate` does (static checks and probe runs)",
              _check),
    "tasks": ("list the zero-shot evaluation tasks", _tasks),
    "evaluate": ("play episodes of a zero-shot task with a trained skill policy and the LM-written policy "
                 "over skills for it; report the success rate", _evaluate),
}


@command("maestro", "MaestroMotif: skill code from an LM, zero-shot evaluation (docs/maestro.md)")
def _maestro(p: argparse.ArgumentParser) -> Handler:
    sub = p.add_subparsers(dest="maestro_command", required=True, metavar="STEP")
    handlers: dict[str, Handler] = {}
    for name, (help_text, setup) in _SUBCOMMANDS.items():
        handlers[name] = setup(sub.add_parser(name, help=help_text, description=help_text))

    def handle(args: argparse.Namespace) -> int:
        return handlers[args.maestro_command](args)

    return handle
