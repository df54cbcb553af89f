"""``llmexplore grid``, ``llmexplore leaderboard`` and ``llmexplore bench``."""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
from pathlib import Path
from typing import Any

from llmexplore.commands import Handler, command
from llmexplore.option_input import merge_option_pairs, parse_option_pairs
from llmexplore.errors import ConfigError, shown
from llmexplore.number_input import number_type


def backend_options(name: str, grid, cli_options: dict[str, Any]) -> dict[str, Any]:
    """The grid file's section for this backend, overridden key by key by ``-b key=value``; validated."""
    from llmexplore.benchmarks.grids.backend_options import parse_options
    from llmexplore.benchmarks.grids.runners import BACKENDS

    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {shown(name)}", hint=f"valid backends: {', '.join(sorted(BACKENDS))}")
    merged = {**(grid.backend_options.get(name, {}) if grid is not None else {}), **cli_options}
    parse_options(name, merged)
    return merged


def make_backend(name: str, jobs: int | None, options: dict[str, Any], grid=None):
    """The grid backend ``name`` (``BACKENDS``), built with the grid file's options for it overridden by the
    ``-b`` ones; an unknown name or option raises ConfigError."""
    from llmexplore.benchmarks.grids.runners import BACKENDS

    merged = backend_options(name, grid, options)
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)(jobs=jobs, **merged)


def build_leaderboard_reporting(*args: Any, **kwargs: Any) -> dict[str, Path]:
    """build_leaderboard, its warnings (e.g. cells with one seed) printed as one plain line each."""
    import warnings

    from llmexplore.benchmarks.results.leaderboard import build_leaderboard

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = build_leaderboard(*args, **kwargs)
    for warning in caught:
        if issubclass(warning.category, UserWarning):
            print(f"warning: {warning.message}", file=sys.stderr)
    return files


def _stop_on_sigint_or_sigterm() -> None:
    """A grid driver stopped with SIGTERM (kill, a scheduler, a closing session) cancels its cells as
    on Ctrl-C, so no job or process outlives it. SIGINT is set too: a process started in the
    background by a non-interactive shell inherits SIGINT ignored, and ``kill -INT`` must still stop
    the grid cleanly (``llmexplore run`` does the same for its cells)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _warn_of_time_limits(grid, backend: str, options: dict[str, Any]) -> None:
    """Before anything is submitted: each cell whose budget would outrun its job's time limit, on stderr."""
    from llmexplore.benchmarks.grids.time_limits import time_limit_warnings

    sys.stdout.flush()  # after the cells listed so far, also where both streams go to one file
    for line in time_limit_warnings(grid, backend, options):
        print(line, file=sys.stderr, flush=True)


def _print_dry_run(grid, backend: str, options: dict[str, Any]) -> None:
    """Each cell with its resolved budget, device and resources; the cells that would outrun their time limit;
    and, for Ray and SLURM, exactly what would be submitted."""
    for cell in grid.cells:
        parent = f"  (after {cell.parent_id})" if cell.parent_id else ""
        r, steps = cell.resources, cell.run.steps if cell.run else cell.spec.steps  # the resolved budget
        print(f"{cell.id}  steps={steps}  device={cell.spec.train.device}  "
              f"resources={r.cpus}cpu/{r.gpus:g}gpu/{r.memory_gb:g}GB/{r.time_minutes}min  -> {cell.run_dir}{parent}")
    print(f"{len(grid.cells)} cells, results in {grid.out_dir}")
    _warn_of_time_limits(grid, backend, options)
    if backend in ("slurm", "ray"):
        from llmexplore.benchmarks.grids.runners import dry_run

        plan = dry_run.slurm_plan if backend == "slurm" else dry_run.ray_plan
        text = plan(grid, options)  # a SLURM plan ends with the sbatch script, byte for byte, newline included
        print(f"\nwhat --backend {backend} would submit (nothing is submitted):\n{text}",
              end="" if text.endswith("\n") else "\n")


@command("grid", "run every cell of a grid file and build its leaderboard")
def _grid(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", help="grid YAML file (see configs/)")
    p.add_argument("--jobs", "-j", type=number_type(int, 1, 4096), default=None,
                   help="cells run at once (default: local 1; ray: as many as the cluster holds; slurm: all, "
                        "SLURM queues them)")
    p.add_argument("--out", help="results directory (default: the grid's `output`, else results/<name>)")
    p.add_argument("--backend", default="local", help="where cells run: local (default), ray, slurm")
    p.add_argument("--backend-option", "-b", action="append", default=[], metavar="KEY=VALUE",
                   help="backend option, e.g. address=auto (ray) or partition=gpu (slurm); overrides the grid "
                        "file's ray:/slurm: section (docs/distributed.md)")
    p.add_argument("--retries", type=number_type(int, 0, 100), default=1, help="extra attempts for a failing cell")
    p.add_argument("--dry-run", action="store_true",
                   help="validate and list the cells, run nothing; with --backend slurm or ray, also print "
                        "exactly what would be submitted (sbatch scripts, Ray task options)")
    p.add_argument("--no-leaderboard", action="store_true", help="do not build the leaderboard once the cells end")
    p.add_argument("--quiet", action="store_true", help="no progress display")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.benchmarks.grids.grid_file import load_grid
        from llmexplore.benchmarks.grids.runners import GridRunner, GridView

        if args.jobs is not None and args.jobs < 1:
            raise ConfigError("--jobs must be at least 1")
        grid = load_grid(args.file, args.out)
        if not args.dry_run:
            from llmexplore.atomic import require_output_dir

            require_output_dir(grid.out_dir, "--out" if args.out else "the grid's output folder")
        cli_options = parse_option_pairs(args.backend_option)
        if args.dry_run:
            _print_dry_run(grid, args.backend, backend_options(args.backend, grid, cli_options))
            return 0
        _stop_on_sigint_or_sigterm()
        _warn_of_time_limits(grid, args.backend, backend_options(args.backend, grid, cli_options))
        backend = make_backend(args.backend, args.jobs, cli_options, grid)
        view = GridView(grid.name, enabled=not args.quiet)
        runner = GridRunner(grid, backend, retries=args.retries, view=view)
        try:
            summary = runner.run()
        except KeyboardInterrupt:
            print(f"\ninterrupted: running cells were stopped at their last checkpoint; rerun the same "
                  f"command to resume ({grid.out_dir / 'grid.json'})", file=sys.stderr)
            return 130
        failed = [c for c in summary["cells"] if c["status"] in ("failed", "blocked")]
        for cell in failed:
            print(f"FAILED {cell['id']}: {cell['error']}\n  log: {cell['run_dir']}/cell.log", file=sys.stderr)
        if not args.no_leaderboard:
            files = build_leaderboard_reporting(grid.out_dir / "runs", grid.out_dir / "leaderboard", title=grid.name)
            print(f"leaderboard: {files['markdown']} (also {files['html'].name}, .csv, .tex, scores.csv, plots)")
        print(json.dumps({"grid": grid.name, "counts": summary["counts"], "results": str(grid.out_dir)}))
        return 1 if failed else 0

    return handle


@command("leaderboard", "aggregate the run records under a folder into leaderboard tables and plots")
def _leaderboard(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("runs", help="folder with run records (searched recursively)")
    p.add_argument("--out", help="where to write the files (default: <runs>/leaderboard)")
    p.add_argument("--title", help="heading of the leaderboard (default: the folder's name, or its parent's for a "
                   "folder named runs or records)")
    p.add_argument("--bootstrap", type=number_type(int, 100, 100_000), default=2000,
                   help="bootstrap resamples (100 to 100,000)")
    p.add_argument("--include-inert", action="store_true",
                   help="rank inert runs too (a method whose intrinsic return never varied; listed apart by default)")

    def handle(args: argparse.Namespace) -> int:
        from llmexplore.atomic import require_output_dir

        runs = Path(args.runs)
        if not runs.is_dir():
            raise ConfigError(f"{runs} is not a folder")
        require_output_dir(args.out or runs / "leaderboard")
        files = build_leaderboard_reporting(runs, Path(args.out) if args.out else runs / "leaderboard",
                                            title=args.title, reps=args.bootstrap, include_inert=args.include_inert)
        for kind, path in files.items():
            print(f"{kind}: {path}")
        return 0

    return handle


@command("bench", "measure this machine: env steps/s (1 and N processes) and training steps/s of methods and presets")
def _bench(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--task", action="append", default=[], help="task to measure (repeatable; default nethack:score)")
    p.add_argument("--method", action="append", default=[], help="method to train (repeatable; default none)")
    p.add_argument("--preset", action="append", default=[],
                   help="training preset (repeatable; 'default' is the family's defaults, e.g. published on a GPU)")
    p.add_argument("--seconds", type=number_type(float, 1, 86_400), default=60.0,
                   help="how long each measurement runs (default 60)")
    p.add_argument("--processes", type=number_type(int, 1, 1024), action="append", default=[],
                   help="env processes at once for the env measurement (repeatable; default 1 and every usable CPU)")
    p.add_argument("--train", "-t", action="append", default=[], metavar="KEY=VALUE",
                   help="training setting for every training measurement, e.g. num_workers=16")
    p.add_argument("--sampling", action="append", choices=["per-env", "batched"], default=[],
                   help="sampling path to train on (repeatable; default both, one after the other for each "
                        "method, so the report gives their ratio; a -t sampling=... setting measures that one)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--env-only", action="store_true", help="measure the env alone, no training")
    only.add_argument("--train-only", action="store_true",
                      help="measure training alone, no env (where the env's figures are known already)")
    p.add_argument("--out", default="bench", help="folder for bench.json and bench.md (default ./bench)")

    def handle(args: argparse.Namespace) -> int:
        import os

        from llmexplore.atomic import require_output_dir
        from llmexplore.benchmarks.speed import run_bench, write_report
        from llmexplore.envs import get_task
        from llmexplore.methods import get_method

        tasks = args.task or ["nethack:score"]
        for task in tasks:
            get_task(task)  # an unknown task is one clear error before any work
        methods = args.method or ["none"]
        for method in methods:
            get_method(method)
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if args.train_only and args.processes:
            raise ConfigError("--processes sets the env measurement, which --train-only leaves out: drop one of them")
        processes = [] if args.train_only else sorted(set(args.processes or [1, usable]))
        out = Path(args.out)
        require_output_dir(out, "--out")
        train = merge_option_pairs({}, args.train)
        if args.sampling and "sampling" in train:
            raise ConfigError("--sampling and -t sampling=... both choose the sampling path: keep one of them")
        samplings = tuple(args.sampling) or ((None,) if "sampling" in train else ("per-env", "batched"))
        report = run_bench(tasks, methods, args.preset or ["default"], args.seconds, processes, train,
                           skip_training=args.env_only, samplings=samplings)
        files = write_report(report, out)
        print(report.markdown())
        print(f"written: {files['json']}, {files['markdown']}")
        return 0

    return handle
