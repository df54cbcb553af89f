"""The invariants a run folder's logs keep however often the run was killed and resumed (or extended).

Shared by the kill-anywhere test and the run-extension test: every line parses, steps never go back,
each episode row has its intrinsic-return row under the same batch stamp, and the record ends where
the budget rule says.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from llmexplore.benchmarks.run.record import read_record

LOGS = ("episodes.jsonl", "intrinsic.jsonl", "metrics.jsonl")


def strict_rows(path: Path) -> list[dict]:
    """Every line of a .jsonl file, parsed; a torn line anywhere (even the last) fails."""
    if not path.exists():
        return []
    text = path.read_text()
    assert text == "" or text.endswith("\n"), f"{path}: last line unfinished"
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{path}, line {number}: {exc}: {line[:200]!r}") from None
    return rows


def rows_through(rows: list[dict], env_steps: int) -> list[dict]:
    """Rows stamped at or below ``env_steps`` (what a checkpoint at that step covers)."""
    return [r for r in rows if r["env_steps"] <= env_steps]


def ceil_to_batch(budget: int, batch: int) -> int:
    """Where a serial run stops: the end of the first batch that reaches the budget."""
    return -(-budget // batch) * batch


def check_run_folder(run_dir: Path, budget: int, batch: int) -> dict[str, list[dict]]:
    """Check a finished run folder's logs and record; returns its rows by file name."""
    rows = {name: strict_rows(run_dir / name) for name in LOGS}
    for name in ("episodes.jsonl", "intrinsic.jsonl"):
        steps = [r["env_steps"] for r in rows[name]]
        assert steps == sorted(steps), f"{name}: steps go back (a stretch counted twice)"
    metric_steps = [r["env_steps"] for r in rows["metrics.jsonl"]]
    assert metric_steps == sorted(set(metric_steps)), "metrics.jsonl: a row repeated or out of order"
    # an episode and its intrinsic return are filed under the same trained batch, never one without the other
    assert Counter(r["env_steps"] for r in rows["episodes.jsonl"]) == \
        Counter(r["env_steps"] for r in rows["intrinsic.jsonl"]), "episode and intrinsic rows disagree"
    final = ceil_to_batch(budget, batch)
    assert all(r["env_steps"] <= final for name in LOGS for r in rows[name])
    record = read_record(run_dir)
    assert record.status == "complete", record.error
    assert record.env_steps == final, f"trained to {record.env_steps}, the budget rule says {final}"
    assert record.sessions[-1].env_steps_end == final
    starts = [s.env_steps_start for s in record.sessions]
    assert starts == sorted(starts), "a session resumed from an earlier point than the one before it"
    return rows
