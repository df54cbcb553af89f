"""Leaderboard files: Markdown, CSV, LaTeX, plots and a static HTML page."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd

from llmexplore.atomic import atomic_write_text
from llmexplore.benchmarks.results.aggregate import (
    Collection,
    Run,
    achievement_table,
    collect,
    per_task_table,
    scores_table,
)
from llmexplore.benchmarks.results.board import Board
from llmexplore.benchmarks.results.board_sections import EXCLUDED_HEADING, is_reward_free, sections
from llmexplore.benchmarks.results.board_writers import latex_document_body, leaderboard_csv, markdown, page_html
from llmexplore.benchmarks.results.cells import FEW_SEEDS, band_name
from llmexplore.benchmarks.results.comparisons import fewest_runs_per_task, improvement_table, profile_curves
from llmexplore.benchmarks.results.cross_task import aggregate_scope, aggregate_table
from llmexplore.benchmarks.results.curve_plots import plot_achievements, plot_curves, plot_profiles
from llmexplore.benchmarks.results.game_versions import refuse_mixed_versions
from llmexplore.benchmarks.results.inert import split_inert
from llmexplore.errors import DataError

#: folder names that say what a folder holds rather than whose runs they are: the default title is the
#: parent's name instead (``leaderboard results/crafter/runs`` is titled "crafter", not "runs")
GENERIC_FOLDER_NAMES = ("runs", "records")


class FewSeedsWarning(UserWarning):
    """A leaderboard cell whose uncertainty cannot be estimated from its seeds."""


class NotCountedWarning(UserWarning):
    """Complete records the leaderboard refused (admission.py) or found twice."""


class InertWarning(UserWarning):
    """Runs whose method contributed nothing (inert.py): listed apart, not ranked."""


def default_title(runs_dir: Path) -> str:
    """The folder's name, or its parent's for a folder named like GENERIC_FOLDER_NAMES."""
    path = runs_dir.resolve()
    return path.parent.name if path.name in GENERIC_FOLDER_NAMES and path.parent.name else path.name


def build_leaderboard(runs_dir: str | Path, out_dir: str | Path, title: str | None = None,
                      reps: int = 2000, include_inert: bool = False) -> dict[str, Path]:
    """Write every leaderboard file for the runs under ``runs_dir``; return their paths. Inert runs
    (inert.py) are listed apart and not ranked unless ``include_inert``."""
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    found = collect(runs_dir)
    if not found.runs and not found.excluded:
        raise DataError(f"no run records under {runs_dir}", hint="run a grid or `llmexplore run` first")
    refuse_mixed_versions(found.runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    ranked, inert = (found.runs, []) if include_inert else split_inert(found.runs)
    board = _board(found, ranked, inert, title or default_title(runs_dir), reps)
    _warn_single_seeds(board.per_task)
    _warn_not_counted(found)
    if inert:
        run, why = inert[0]
        warnings.warn(f"{len(inert)} inert run(s) not ranked, e.g. {run.path}: {why} (all of them: "
                      "'Inert runs' in leaderboard.md; --include-inert ranks them)", InertWarning, stacklevel=2)
    _plot(board, out_dir)
    parts = sections(board)
    scores = scores_table(found.runs)
    why_inert = {str(run.path): why for run, why in inert}
    scores["inert"] = [why_inert.get(path, "") for path in scores["run_dir"]]
    contents = {"scores_csv": ("scores.csv", scores.to_csv(index=False)),
                "scores_json": ("scores.json", _scores_json(scores)),
                "markdown": ("leaderboard.md", markdown(board, parts)),
                "csv": ("leaderboard.csv", leaderboard_csv(board)),
                "latex": ("leaderboard.tex", latex_document_body(board, parts)),
                "html": ("index.html", page_html(board, parts))}
    files: dict[str, Path] = {}
    for kind, (name, text) in contents.items():
        files[kind] = out_dir / name
        atomic_write_text(files[kind], text)
    return files


def _board(found: Collection, runs: list[Run], inert: list[tuple[Run, str]], title: str, reps: int) -> Board:
    """Every table the files show, computed once over the ranked ``runs``."""
    per_task = per_task_table(runs, reps=reps)
    tasks = sorted(per_task["task"].unique()) if not per_task.empty else []
    board = Board(title, found, per_task, aggregate_table(runs, reps=reps), achievement_table(runs),
                  tasks, scope=aggregate_scope(runs), reps=reps, runs=runs, inert=inert,
                  improvements={task: improvement_table(runs, task, reps=reps) for task in tasks})
    if board.has_aggregate:
        board.improvements[None] = improvement_table(runs, None, reps=reps)
    return board


def _plot(board: Board, out_dir: Path) -> None:
    """The curves, profiles and achievement bars of every task, and the profile across tasks."""
    runs = board.runs
    for task in board.tasks:
        metric = board.per_task[board.per_task["task"] == task]["metric"].iloc[0]
        safe = task.replace(":", "-")
        paths = [plot_curves(runs, task, metric, out_dir / f"curves_{safe}.png", with_return=not is_reward_free(task)),
                 plot_profiles(profile_curves(runs, task, reps=board.reps), f"{task}: performance profile "
                               f"({band_name(fewest_runs_per_task(runs, task))})", metric,
                               out_dir / f"profile_{safe}.png"),
                 plot_achievements(board.achievements, task, out_dir / f"achievements_{safe}.png")]
        board.images[task] = [p for p in paths if p is not None]
    if None in board.improvements:
        path = plot_profiles(profile_curves(runs, None, reps=board.reps), "All tasks: performance profile of "
                             f"normalised scores ({band_name(fewest_runs_per_task(runs))})", "normalised score",
                             out_dir / "profile_all.png")
        board.images[None] = [path] if path else []


def _warn_single_seeds(per_task: pd.DataFrame) -> None:
    single = per_task[per_task["seeds"] < 2] if not per_task.empty else per_task
    if len(single):
        cells = ", ".join(f"{r.label} on {r.task}" for r in single.itertuples())
        warnings.warn(f"one seed only for {cells}: no confidence interval can be given; run more seeds "
                      f"(at least {FEW_SEEDS} for a meaningful interval)", FewSeedsWarning, stacklevel=3)


def _warn_not_counted(found: Collection) -> None:
    refused = [row for row in found.excluded if row["status"] in ("refused", "duplicate")]
    if refused:
        first = refused[0]
        warnings.warn(f"{len(refused)} complete record(s) not counted, e.g. {first['path']}: {first['why']} "
                      f"(all of them, with the reason: '{EXCLUDED_HEADING}' in leaderboard.md)",
                      NotCountedWarning, stacklevel=3)


def _scores_json(scores: pd.DataFrame) -> str:
    """The per-run scores as a list of objects; missing values are null."""
    rows = json.loads(scores.to_json(orient="records"))
    return json.dumps({"schema": "llmexplore.scores", "schema_version": 1, "runs": rows}, indent=1) + "\n"
