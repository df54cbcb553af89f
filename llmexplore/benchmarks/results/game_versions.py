"""One table, one game: records whose environment versions differ are never ranked together.

Why: a new release of a game's simulator (NLE, say) can change the game itself (its dungeon generation,
messages, speed of play), so scores from two versions are two benchmarks; each family names the record
keys that carry its game's versions (``EnvFamily.game_version_keys``). Likewise a row judged by the
embedded oracle must have one rules version across its seeds (``lm/oracle/versions.py``), one sampling
path (``train.sampling``; a record made before the option ran per-env) and one critic layout
(``train.reward_streams``, with the intrinsic stream's discount; a record made before the option ran one
stream): RND's default became two streams, and a seed added later to a one-stream row would change its
method. A record that does not state a game's
version (written before versions were recorded) counts as the version every commit of that time required
(``EnvFamily.game_versions_unrecorded``: NLE 1.0.0 for NetHack and MiniHack), and is named as such; where a
family declares none, it is taken as it is. Two versions in one table are refused, naming the records of each.
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
#: the spec's training key naming how the critic learns the rewards (one or two streams; one per table row)
STREAMS_KEY = "train.reward_streams"


def version_conflicts(runs: Iterable[Run]) -> list[str]:
    """A sentence per task whose records state two versions of one game package, and per row (label, task)
    whose records state two oracle rules versions; empty when every table is one game."""
    by_task: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    by_row: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        environment, spec = run.record.environment, run.record.spec
        for key, (version, stated) in _game_versions(spec.task, environment).items():
            by_task[(spec.task, key)][version].append(str(run.path) if stated else f"{run.path} (not recorded: "
                                                      f"made when llmexplore required {key} {version})")
        row = f"{spec.label or spec.method} on {spec.task}"
        if environment.get(ORACLE_KEY) is not None:
            by_row[(row, ORACLE_KEY)][str(environment[ORACLE_KEY])].append(str(run.path))
        by_row[(row, SAMPLING_KEY)][spec.sampling].append(str(run.path))  # a row is trained on one path
        by_row[(row, STREAMS_KEY)][spec.reward_streams].append(str(run.path))  # and learns with one critic layout
    problems = []
    for (where, key), versions in [*by_task.items(), *by_row.items()]:
        if len(versions) > 1:
            listed = "; ".join(f"{key} {version}: {', '.join(sorted(paths)[:3])}"
                               + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
                               for version, paths in sorted(versions.items()))
            problems.append(f"{where} mixes {len(versions)} versions of {key} ({listed})")
    return problems


def _game_versions(task: str, environment: dict) -> dict[str, tuple[str, bool]]:
    """Game version key -> (version, whether the record states it) for the task's game
    (``EnvFamily.game_version_keys``), a key the record omits taking the family's
    ``game_versions_unrecorded``; empty for a task this llmexplore does not know."""
    from llmexplore.envs.registry import get_family, get_task
    from llmexplore.errors import UserError

    try:
        family = get_family(get_task(task).family)
    except UserError:
        return {}
    versions = {}
    for key in family.game_version_keys:
        if environment.get(key) is not None:
            versions[key] = (str(environment[key]), True)
        elif key in family.game_versions_unrecorded:
            versions[key] = (family.game_versions_unrecorded[key], False)
    return versions


def refuse_mixed_versions(runs: Iterable[Run]) -> None:
    """Raise a DataError naming the records when a table would mix versions of one game or oracle."""
    problems = version_conflicts(runs)
    if problems:
        raise DataError("these records cannot share a table: " + " | ".join(problems),
                        hint="a new version can change the game (or the oracle's answers): build one leaderboard "
                             "per version, with each version's records under a folder of their own")
