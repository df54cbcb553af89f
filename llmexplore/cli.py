"""The ``llmexplore`` command: the hub that builds the parser from the sub-command registry
(``llmexplore/commands.py``), and the commands about runs, tasks and methods themselves."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from llmexplore.commands import Handler, command, print_table, registered_commands
from llmexplore.errors import PATH_ECHO_LIMIT, ConfigError, UserError, shorten
from llmexplore.number_input import MAX_SEED, coefficient_type, seed_type, steps_type
from llmexplore.option_input import merge_option_pairs
from llmexplore.yaml_input import load_yaml


def load_yaml_file(path: str | Path) -> dict[str, Any]:
    """A YAML settings file (a mapping), read through the one checked YAML reader."""
    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings")
    return data


# -- llmexplore run ---------------------------------------------------------------------------
@command("run", "train one (method, task, seed) cell and write its run record")
def _run(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--method", help="exploration method (`llmexplore methods`)")
    p.add_argument("--task", help="task name (`llmexplore envs`)")
    p.add_argument("--seed", type=seed_type, help=f"run seed, 0 to {MAX_SEED:,}")
    p.add_argument("--steps", type=steps_type,
                   help="env-step budget, or 'published' for the task's published budget (the default when it "
                        "takes under a day here; otherwise --steps is required)")
    p.add_argument("--out", required=True, help="run directory (created; rerunning resumes, and --out alone "
                                                "trains the resolved run the folder holds, as a grid's cell does)")
    p.add_argument("--config", help="YAML run spec; command-line options override it")
    p.add_argument("--ext-coef", type=coefficient_type, help="extrinsic reward coefficient c_ext")
    p.add_argument("--int-coef", type=coefficient_type, help="intrinsic reward coefficient c_int")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE", help="method option")
    p.add_argument("--train", "-t", action="append", default=[], metavar="KEY=VALUE", help="training option")
    p.add_argument("--lm", action="append", default=[], metavar="KEY=VALUE",
                   help="language-model option, repeated or comma-separated (--lm backend=openai,answer=score)")
    p.add_argument("--parent", help="fine-tune from this run directory's latest checkpoint")
    p.add_argument("--reset", action="append", default=[], help="with --parent: policy part to re-initialise")
    p.add_argument("--label", help="row name in tables")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.epilog = "every -t, -o and --lm key, with its default and meaning: llmexplore options [--method M] [--task T]"

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.benchmarks.run.cell import run_cell, run_folder
        from llmexplore.benchmarks.grids.runners.launch import honour_parent_death, stop_on_sigterm
        from llmexplore.benchmarks.run.spec import ResolvedRun, RunSpec

        stop_on_sigterm()  # schedulers stop jobs with SIGTERM: checkpoint as on Ctrl-C
        honour_parent_death()  # started by a remote launcher: do not outlive it

        data: dict[str, Any] = {}
        if args.config:
            data = load_yaml_file(args.config)
        elif _only_the_folder(args):  # a grid's cell, or a resumption: the folder's resolved run, as it is
            record = run_folder(args.out, quiet=args.quiet)
            if record is not None:
                return _report_cell(record, args.out)
        elif args.method is None and args.task is None:  # the folder's run with some settings changed
            stored = ResolvedRun.read(Path(args.out).expanduser())
            data = stored.spec_dict() if stored is not None else {}
        for key in ("method", "task", "seed", "steps", "label"):
            if getattr(args, key) is not None:
                data[key] = getattr(args, key)
        if args.ext_coef is not None:
            data["ext_coef"] = args.ext_coef
        if args.int_coef is not None:
            data["int_coef"] = args.int_coef
        for field, pairs in (("method_options", args.option), ("train", args.train), ("lm", args.lm)):
            if pairs:
                data[field] = merge_option_pairs(data.get(field, {}), pairs)
        if args.parent:
            data["parent"] = {"run_dir": args.parent, "reset": args.reset}
        missing = [k for k in ("method", "task") if k not in data]
        if missing:
            raise ConfigError(f"missing {' and '.join('--' + m for m in missing)}")
        # resolving the spec applies the budget rule: the published budget only when it is short here or asked for
        return _report_cell(run_cell(RunSpec.parse(data, "run options"), args.out, quiet=args.quiet), args.out)

    return handle


def _only_the_folder(args: argparse.Namespace) -> bool:
    """``run --out DIR`` with nothing that says which run: the run the folder holds."""
    settings = (args.method, args.task, args.seed, args.steps, args.ext_coef, args.int_coef, args.parent,
                args.label)
    return all(value is None for value in settings) and not (args.option or args.train or args.lm)


def _report_cell(record: Any, out: str) -> int:
    """The cell's outcome as one JSON line (and why it failed, on stderr); the exit code says complete."""
    print(json.dumps({"status": record.status, "cell": record.cell, "env_steps": record.env_steps,
                      "steps_per_second": record.steps_per_second, record.metric:
                      record.final_metrics.get(record.metric), "record": str(Path(out) / "run.json")}))
    if record.status == "failed" and record.error:  # say why on the console, not only in run.json
        tail = "\n".join((record.error.get("log_tail") or "").splitlines()[-8:])
        print(f"llmexplore run: failed: {record.error.get('message', '')}\n{tail}", file=sys.stderr)
    return 0 if record.status == "complete" else 1


# -- listings --------------------------------------------------------------------------------
@command("envs", "list tasks with their gymnasium ids and default budgets")
def _envs(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    p.add_argument("--keys", action="store_true",
                   help="also list each task's observation keys (builds every family's adapter, so it "
                        "imports the simulators: a few seconds)")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.envs import GYM_IDS, list_tasks

        rows = []
        for task in list_tasks():
            row = {"task": task.name, "gym_id": GYM_IDS[task.name], "budget": task.default_budget,
                   "c_ext": task.default_ext_coef, "reward_free": task.reward_free,
                   "description": task.description}
            if args.keys:
                row["obs_keys"] = _observation_keys(task)
            rows.append(row)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        header = ["task", "gymnasium id", "budget", "c_ext"] + (["observation keys"] if args.keys else [])
        print_table(header + ["description"],
               [[r["task"], r["gym_id"], f"{r['budget']:,}", r["c_ext"]]
                + ([", ".join(r["obs_keys"])] if args.keys else []) + [r["description"]] for r in rows])
        return 0

    return handle


def _observation_keys(task: Any) -> list[str]:
    """A task's observation keys, from its adapter (which imports the family's simulator)."""
    from llmexplore.envs import make_adapter

    try:
        return list(make_adapter(task).obs_keys)
    except UserError as exc:
        return [f"unavailable: {exc.message}"]


@command("methods", "list exploration methods; with a name, that method's options and defaults")
def _methods(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("name", nargs="?", help="one method: each option with its default (the published value "
                                           "unless its Deviations row says otherwise) and what it does")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.methods import get_method, list_methods

        if args.name:
            return _method_options(get_method(args.name), args.json)
        rows = [{"method": m.name, "c_int": m.default_int_coef, "needs_keys": list(m.required_keys),
                 "uses_lm": m.uses_lm, "options": list(m.Options.model_fields), "description": m.description}
                for m in list_methods()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print_table(["method", "c_int", "needs keys", "LM", "options", "description"],
                   [[r["method"], r["c_int"], ", ".join(r["needs_keys"]) or "-", "yes" if r["uses_lm"] else "-",
                     ", ".join(r["options"]) or "-", r["description"]] for r in rows])
        return 0

    return handle


def _method_options(method: Any, as_json: bool) -> int:
    """One method's options: name, default, description (``-m name=value`` sets one)."""
    rows = [{"option": name, "default": field.get_default(call_default_factory=True),
             "description": field.description or ""}
            for name, field in method.Options.model_fields.items()]
    if as_json:
        presets = {name: {"options": dict(p.options), "c_int": p.int_coef, "source": p.source}
                   for name, p in method.presets.items()}
        print(json.dumps({"method": method.name, "c_int": method.default_int_coef, "options": rows,
                          "presets": presets}, indent=2, default=str))
        return 0
    print(f"{method.name}: {method.description}; default c_int {method.default_int_coef}")
    print_table(["option", "default", "description"],
           [[r["option"], "-" if r["default"] is None else r["default"], r["description"]] for r in rows])
    for name, preset in method.presets.items():  # -o preset=NAME
        sets = ", ".join(f"{k}={v}" for k, v in preset.options.items())
        coef = f", c_int {preset.int_coef:g}" if preset.int_coef is not None else ""
        print(f"preset {name}: {sets}{coef} ({preset.source})")
    return 0


@command("schema", "print the JSON Schema of run records (or of evaluation records)")
def _schema(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--evaluation", action="store_true",
                   help="the schema of evaluation records (RUN_DIR/eval/*.json) instead of run records")

    def handle(args: argparse.Namespace) -> int:
        if args.evaluation:
            from llmexplore.benchmarks.evaluation.eval_record import json_schema
        else:
            from llmexplore.benchmarks.run.record import json_schema

        print(json.dumps(json_schema(), indent=2))
        return 0

    return handle


class _VersionAction(argparse.Action):
    """``--version``, reading the package metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from llmexplore import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows each option's default (when it has one worth showing) and keeps descriptions' line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action) or text


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen sub-command's arguments are set up, since setting one up may import
    heavy modules (its choices come from them) and the rest only need their name and help line."""
    parser = argparse.ArgumentParser(prog="llmexplore", description="LM-guided exploration benchmark suite",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    words = list(sys.argv[1:] if argv is None else argv)
    modules = [__name__, *_load_command_modules()]
    # the order of --help: the hub's own commands, then each module's in the order listed, whichever was imported first
    commands = sorted(registered_commands(),
                      key=lambda c: modules.index(c.module) if c.module in modules else len(modules))
    chosen = words[0] if words and words[0] in {c.name for c in commands} else None
    for found in commands:
        p = sub.add_parser(found.name, help=found.help, description=found.help, formatter_class=HelpFormatter)
        if found.name == chosen:
            p.set_defaults(_handler=found.setup(p))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code; a user error or an OS error is one line on stderr and exit
    code 2, a reader that closed stdout gives 128 + SIGPIPE, quietly."""
    import logging

    logging.raiseExceptions = False  # a log line that cannot be written (a full disk) is dropped, not a traceback
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        code = args._handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return code
    except UserError as exc:
        print(f"llmexplore {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, or a scheduler's or dead launcher's SIGTERM, outside a training loop
        return _stopped_by_signal(args.command)
    except BrokenPipeError:  # the reader went away (`llmexplore schema | head`): stop quietly, as `cat` does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush of stdout at exit must not fail again
        return 128 + signal.SIGPIPE
    except OSError as exc:  # the disk is full, a path is a folder, permission denied: say which and why
        print(f"llmexplore {args.command}: error: {describe_os_error(exc)}", file=sys.stderr)
        return 2


def _stopped_by_signal(command: str) -> int:
    """One line instead of a traceback, and the shell's code for the signal (130 for SIGINT, 143 for SIGTERM).
    What a stopped command had written stays: files are written atomically, and a run resumes when rerun."""
    import multiprocessing

    from llmexplore.agents.stop_requests import stop_requested

    for child in multiprocessing.active_children():  # e.g. sample-factory's env-info process, half started:
        child.kill()  # gone before it reads a pipe this process no longer writes (and prints a traceback)
        child.join(timeout=5)
    name = stop_requested() or "SIGINT"
    number = signal.SIGTERM if name == "SIGTERM" else signal.SIGINT
    print(f"llmexplore {command}: stopped by {name} before it finished; what it wrote is kept: rerun the same "
          "command to go on", file=sys.stderr, flush=True)
    return 128 + number


#: what to do about the operating-system errors a command can meet
_OS_ERROR_HINTS = {
    errno.ENOSPC: "free space on that disk (or write elsewhere) and rerun: a run resumes from its last checkpoint",
    errno.EDQUOT: "free space within your disk quota (or write elsewhere) and rerun",
    errno.EROFS: "the file system is read-only: write somewhere else",
    errno.EACCES: "check the permissions of that path, or write somewhere else",
    errno.EPERM: "check the permissions of that path, or write somewhere else",
    errno.EISDIR: "a folder stands where a file is expected: move it away and rerun",
    errno.ENOTDIR: "a file stands where a folder is expected: move it away and rerun",
}


def describe_os_error(exc: OSError) -> str:
    """An OSError as one line naming the path and the problem, with what to do about it."""
    where = f"{shorten(str(exc.filename), PATH_ECHO_LIMIT)}: " if exc.filename else ""
    hint = _OS_ERROR_HINTS.get(exc.errno or 0)
    return f"{where}{exc.strerror or exc}" + (f"\n  hint: {hint}" if hint else "")


def _load_command_modules() -> list[str]:
    """The sub-commands that live beside their feature: importing each module registers its commands
    (``@command``). The list is here only, as plain imports, and each module sets its parser up only when
    its command is chosen, so ``llmexplore --help`` imports none of the heavy parts. Returns the modules'
    names in the order their commands are listed."""
    import llmexplore.benchmarks.cli  # grid, leaderboard, bench
    import llmexplore.data.cli  # data
    import llmexplore.benchmarks.evaluation.cli  # evaluate, visualize
    import llmexplore.lm.cli  # lm
    import llmexplore.methods.motif.cli  # motif
    import llmexplore.methods.maestro.cli  # maestro
    import llmexplore.options_cli  # options

    return [module.__name__ for module in (llmexplore.benchmarks.cli, llmexplore.data.cli,
                                           llmexplore.benchmarks.evaluation.cli, llmexplore.lm.cli,
                                           llmexplore.methods.motif.cli, llmexplore.methods.maestro.cli,
                                           llmexplore.options_cli)]


if __name__ == "__main__":
    sys.exit(main())
