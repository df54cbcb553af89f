"""Which run a run folder holds: a folder takes one run, and a resumption must be that run.

The folder's ``resolved.json`` names its run. Whoever prepares a folder (the grid before it starts a cell,
``llmexplore run`` for a run started by hand) goes through ``adopt_folder``: a folder holding another run is
refused, one holding this run (or this run with other operational settings, such as more workers) takes the
resolved run. A folder of a version before resolved runs (a record, no ``resolved.json``) is checked against
its record's spec; a method option a later llmexplore added counts at its default.
"""

from __future__ import annotations

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
        _refuse_another_run(run_dir, _with_later_option_defaults(stored.model_dump(mode="json"), run),
                            run.model_dump(mode="json"))
    elif previous is not None:
        _refuse_another_run(run_dir, previous.spec.model_dump(mode="json"), run.spec_dict())
    if stored != run:  # first session, or only operational settings changed (e.g. more workers)
        run.write(run_dir)
    return previous


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
    differences = spec_differences(before, now)
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
