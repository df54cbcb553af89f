#!/usr/bin/env python3
"""Did two grids train the same agents? Compares two grid output folders (``grid --out``) cell by cell.

For each cell found in both, each log (episodes, intrinsic returns, Crafter's stats, metrics) is compared
row by row, key by key, and the keys are reported in three kinds: values that differ, keys only one side
writes, and (for the intrinsic rows) returns that are the same under each stamp but written in another
order. Why: after a refactor, "same behaviour" means every episode and every learner statistic equal, while
stamps or added columns may change on purpose; this says which is which instead of a bare ``cmp``.

    python scripts/compare_runs.py BEFORE AFTER [--ignore env_steps]

Exit code 0 when no compared value differs outside the ignored keys, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

LOGS = ("episodes.jsonl", "intrinsic.jsonl", "stats.jsonl", "metrics.jsonl")


def read_rows(path: Path) -> list[dict]:
    """Every row of a JSON-lines log (a torn last line is skipped, as the run's readers do)."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def returns_by_stamp(rows: list[dict]) -> dict[int, Counter]:
    """The intrinsic returns written under each stamp, as a multiset (their order is the writer's choice)."""
    stamps: dict[int, Counter] = defaultdict(Counter)
    for row in rows:
        stamps[row.get("env_steps", -1)][row.get("intrinsic_return")] += 1
    return dict(stamps)


def compare_log(before: list[dict], after: list[dict], ignore: frozenset[str]) -> dict[str, object]:
    """What differs between two versions of one log: row counts, keys one side lacks, keys whose values
    differ in some row (outside ``ignore``)."""
    keys_before = set().union(*before) if before else set()
    keys_after = set().union(*after) if after else set()
    differ = sorted({k for a, b in zip(before, after) for k in set(a) & set(b) - ignore if a[k] != b[k]})
    return {"rows": (len(before), len(after)), "only_before": sorted(keys_before - keys_after),
            "only_after": sorted(keys_after - keys_before), "differ": differ}


def compare_cell(before: Path, after: Path, ignore: frozenset[str]) -> tuple[list[str], bool]:
    """Report lines for one cell, and whether it is the same up to the ignored keys."""
    lines, same = [], True
    for name in LOGS:
        if not (before / name).exists() and not (after / name).exists():
            continue
        if not (before / name).exists() or not (after / name).exists():
            lines.append(f"  {name}: only in {'after' if (after / name).exists() else 'before'}")
            same = False
            continue
        rows_before, rows_after = read_rows(before / name), read_rows(after / name)
        report = compare_log(rows_before, rows_after, ignore)
        differ = report["differ"]
        note = ""
        if name == "intrinsic.jsonl" and differ == ["intrinsic_return"] \
                and returns_by_stamp(rows_before) == returns_by_stamp(rows_after):
            differ, note = [], " (the same returns under each stamp, in another order)"
        same = same and not differ and report["rows"][0] == report["rows"][1]
        extra = "".join(f"; only {side.split('_')[1]}: {', '.join(report[side])}"
                        for side in ("only_before", "only_after") if report[side])
        verdict = f"values differ: {', '.join(differ)}" if differ else "same values"
        lines.append(f"  {name}: {report['rows'][0]} / {report['rows'][1]} rows, {verdict}{note}{extra}")
    return lines, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a grid's output folder (its --out)")
    parser.add_argument("after", type=Path, help="the other grid's output folder")
    parser.add_argument("--ignore", nargs="*", default=[], help="keys whose differences are expected (e.g. env_steps)")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not (folder / "runs").is_dir():
            print(f"compare_runs: {folder} has no runs/ folder: pass a grid's --out folder", file=sys.stderr)
            return 2
    cells = sorted({p.relative_to(args.before / "runs") for p in (args.before / "runs").glob("*/*/seed*")})
    common = [c for c in cells if (args.after / "runs" / c).is_dir()]
    if not common:
        print("compare_runs: the two folders share no cell", file=sys.stderr)
        return 2
    all_same = True
    for cell in common:
        lines, same = compare_cell(args.before / "runs" / cell, args.after / "runs" / cell, frozenset(args.ignore))
        all_same &= same
        print(f"{cell}: {'same' if same else 'DIFFERENT'}")
        print("\n".join(lines))
    missing = [str(c) for c in cells if c not in common]
    if missing:
        print(f"cells only in {args.before}: {', '.join(missing)}")
    print(f"{len(common)} cells compared: {'every compared value is the same' if all_same else 'some differ'}"
          + (f" (ignored: {', '.join(args.ignore)})" if args.ignore else ""))
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
