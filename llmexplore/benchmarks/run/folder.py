"""Which run a run folder holds: a folder takes one run, and a resumption must be that run.

The folder's ``resolved.json`` names its run. Whoever prepares a folder (the grid before it starts a cell,
``llmexplore run`` for a run started by hand) goes through ``adopt_folder``: a folder holding another run is
refused, one holding this run (or this run with other operational settings, such as more workers) takes the
resolved run. The same run with a larger budget is an extension: it continues from the folder's last
checkpoint to the new budget (a smaller budget is refused: the run may already have trained past it). A
folder of a version before resolved runs (a record, no ``resolved.json``) is checked against its record's
spec; a method option a later llmexplore added counts at its default.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from llmexplore.agents.resolved_run import OPERATIONAL, ResolvedRun
from llmexplore.benchmarks.run.record import RECORD_FILE, RunRecord, read_record
from llmexplore.errors import ConfigError


def adopt_folder(run_dir: Path, run: ResolvedRun) -> RunRecord | None:
    """Refuse a folder holding another run; else write the resolved run there (what every later step reads)
    and return the folder's record, if any. A folder of an older version (a record, no resolved run) is
    checked against its record's spec and gets its resolved run now."""
    stored = ResolvedRun.read(run_dir)
    previous = folder_record(run_dir)
    if stored is not None:
        before = _with_later_option_defaults(stored.model_dump(mode="json"), run)
        _refuse_another_run(run_dir, before, run.model_dump(mode="json"))
    elif previous is not None:
        before = previous.spec.model_dump(mode="json")
        before["train"] = {**before["train"], "sampling": previous.spec.sampling}  # absent: it ran per-env
        _refuse_another_run(run_dir, before, run.spec_dict())
    if stored is not None or previous is not None:
        _check_budget(run_dir, before.get("steps"), run.steps)
    if stored != run:  # first session, a larger budget, or only operational settings changed (more workers)
        run.write(run_dir)
    return previous


def is_complete(record: RunRecord | None, budget: int) -> bool:
    """Whether a folder's record says its run reached ``budget`` (a complete run extended to a larger
    budget is not complete until it reaches that one)."""
    return record is not None and record.status == "complete" and record.budget >= budget


def _check_budget(run_dir: Path, before: int | None, now: int) -> None:
    """A larger budget extends the run; a smaller one is refused (its later checkpoints, episodes and
    record are past that budget, and nothing already written is thrown away)."""
    if before is None or now == before:
        return
    if now < before:
        raise ConfigError(
            f"{run_dir} holds this run with a budget of {before:,} env steps; {now:,} is smaller",
            hint="a run can be extended, not shortened: give a budget of at least the folder's, or choose "
                 "another output directory (final metrics already count only episodes within the budget)")
    print(f"llmexplore run: extending {run_dir} from {before:,} to {now:,} env steps "
          "(it continues from its last checkpoint)", file=sys.stderr, flush=True)


def folder_record(run_dir: Path) -> RunRecord | None:
    """The folder's run record, None before its first session wrote one."""
    return read_record(run_dir) if (run_dir / RECORD_FILE).exists() else None


def _with_later_option_defaults(stored: dict[str, Any], run: ResolvedRun) -> dict[str, Any]:
    """A stored resolved run with the method options a later llmexplore added, at their defaults.

    An option added to a method keeps the earlier behaviour at its default (the rule for every new
    option), so a folder written before it existed resumes when the option is left at that default,
    and is refused as another run when it is set otherwise. ``train`` needs no such step: reading the
    stored run through its model already fills new fields with their defaults."""
    from llmexplore.methods.registry import get_method

    if stored.get("method") != run.method:
        return stored  # another method altogether: reported as it is
    from pydantic_core import to_jsonable_python

    stored_options = stored.get("method_options") or {}
    added = {key: to_jsonable_python(field.get_default(call_default_factory=True))
             for key, field in get_method(run.method).Options.model_fields.items()
             if key not in stored_options and not field.is_required()}  # a required option has no default
    return {**stored, "method_options": {**stored_options, **added}}


def _refuse_another_run(run_dir: Path, before: dict[str, Any], now: dict[str, Any]) -> None:
    """Refuse when anything but the budget (``_check_budget``) and operational settings differs."""
    differences = spec_differences({**before, "steps": None}, {**now, "steps": None})
    if differences:
        raise ConfigError(
            f"{run_dir} holds a different run ({'; '.join(differences[:5])})",
            hint="choose another output directory, or delete this one to start over",
        )


def spec_differences(old: dict[str, Any], new: dict[str, Any], prefix: tuple = ()) -> list[str]:
    """``field: old before, new now`` for every non-operational field that differs."""
    out = []
    for key in sorted(set(old) | set(new)):
        path = prefix + (key,)
        if path in OPERATIONAL:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(spec_differences(a, b, path))
        elif a != b:
            out.append(f"{'.'.join(path)}: {a!r} before, {b!r} now")
    return out
