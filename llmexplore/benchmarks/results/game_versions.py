"""One table, one game: records whose environment versions differ are never ranked together.

Why: a new release of a game's simulator (NLE, say) can change the game itself (its dungeon generation,
messages, speed of play), so scores from two versions are two benchmarks; each family names the record
keys that carry its game's versions (``EnvFamily.game_version_keys``). Likewise a row judged by the
embedded oracle must have one rules version across its seeds (``lm/oracle/versions.py``), and one sampling
path (``train.sampling``; a record made before the option ran per-env). Records that do
not say a version (written before it was recorded) are taken as they are; two versions a table's records
do state are refused, naming the records of each.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from llmexplore.benchmarks.results.aggregate import Run
from llmexplore.errors import DataError

#: the record's environment key naming the embedded oracle's rules version (one per table row)
ORACLE_KEY = "oracle_rules_version"
#: the spec's training key naming the sampling path (per-env or batched; one per table row)
SAMPLING_KEY = "train.sampling"


def version_conflicts(runs: Iterable[Run]) -> list[str]:
    """A sentence per task whose records state two versions of one game package, and per row (label, task)
    whose records state two oracle rules versions; empty when every table is one game."""
    by_task: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    by_row: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        environment, spec = run.record.environment, run.record.spec
        for key in _game_keys(spec.task):
            if environment.get(key) is not None:
                by_task[(spec.task, key)][str(environment[key])].append(str(run.path))
        row = f"{spec.label or spec.method} on {spec.task}"
        if environment.get(ORACLE_KEY) is not None:
            by_row[(row, ORACLE_KEY)][str(environment[ORACLE_KEY])].append(str(run.path))
        by_row[(row, SAMPLING_KEY)][spec.sampling].append(str(run.path))  # a row is trained on one path
    problems = []
    for (where, key), versions in [*by_task.items(), *by_row.items()]:
        if len(versions) > 1:
            listed = "; ".join(f"{key} {version}: {', '.join(sorted(paths)[:3])}"
                               + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
                               for version, paths in sorted(versions.items()))
            problems.append(f"{where} mixes {len(versions)} versions of {key} ({listed})")
    return problems


def _game_keys(task: str) -> tuple[str, ...]:
    """The record keys naming versions of the task's game (``EnvFamily.game_version_keys``); none for a task
    this llmexplore does not know."""
    from llmexplore.envs.registry import get_family, get_task
    from llmexplore.errors import UserError

    try:
        return get_family(get_task(task).family).game_version_keys
    except UserError:
        return ()


def refuse_mixed_versions(runs: Iterable[Run]) -> None:
    """Raise a DataError naming the records when a table would mix versions of one game or oracle."""
    problems = version_conflicts(runs)
    if problems:
        raise DataError("these records cannot share a table: " + " | ".join(problems),
                        hint="a new version can change the game (or the oracle's answers): build one leaderboard "
                             "per version, with each version's records under a folder of their own")
