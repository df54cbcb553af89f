"""``llmexplore data list`` and ``llmexplore data fetch NAME [--from DIR_OR_URL]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llmexplore.commands import Handler, command, print_table
from llmexplore.number_input import positive_seconds_type


@command("data", "list the fetchable datasets, or fetch one into the data folder")
def _data(p: argparse.ArgumentParser) -> Handler:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="datasets, where they go, whether they are present and verified")
    listing.add_argument("--json", action="store_true", help="print the listing as JSON")
    listing.add_argument("--dir", help="data folder (default: $LLMEXPLORE_DATA or ~/.cache/llmexplore/data)")
    fetching = sub.add_parser("fetch", help="download a dataset's pinned files and verify their sha256")
    fetching.add_argument("name", help="dataset name (`llmexplore data list`)")
    fetching.add_argument("--from", dest="source", metavar="DIR_OR_URL",
                          help="a local copy or a mirror URL laid out as <DIR_OR_URL>/<dataset>/<file>")
    fetching.add_argument("--dir", help="data folder (default: $LLMEXPLORE_DATA or ~/.cache/llmexplore/data)")
    fetching.add_argument("--timeout", type=positive_seconds_type, default=30.0, help="seconds to wait for the server")

    def handle(args: argparse.Namespace) -> int:
        root = Path(args.dir).expanduser() if args.dir else None
        return _list(root, args.json) if args.action == "list" else _fetch(args, root)

    return handle


def _list(root: Path | None, as_json: bool) -> int:
    from llmexplore.data.catalog import DATASETS
    from llmexplore.data.fetch import dataset_state
    from llmexplore.envs import families
    from llmexplore.settings import data_path

    rows = []
    for info in DATASETS.values():
        # where tasks read it (a dataset variable, the data folder, or a development copy) unless --dir
        folder = root / info.name if root else data_path(info.name, must_exist=False)
        states = [s.state for s in dataset_state(info, folder)]
        kinds = [k for k in ("verified", "missing", "partial", "corrupt") if k in states]
        status = kinds[0] if len(kinds) == 1 else ", ".join(f"{states.count(k)} files {k}" for k in kinds)
        rows.append({"name": info.name, "status": status, "path": str(folder), "size": info.size,
                     "files": len(info.files), "source": info.source, "description": info.description,
                     "families": [f.name for f in families() if info.name in f.data_sources]})
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(["dataset", "status", "size", "folder", "source"],
               [[r["name"], r["status"], f"{r['size'] / 1e6:.1f} MB", r["path"], r["source"]] for r in rows])
        print("fetch one with `llmexplore data fetch NAME` (offline: --from <folder or URL of a copy>)")
    return 0


def _fetch(args: argparse.Namespace, root: Path | None) -> int:
    import os

    from llmexplore.data.catalog import dataset
    from llmexplore.data.fetch import fetch
    from llmexplore.settings import data_home

    override = dataset(args.name).env_var
    if os.environ.get(override):
        print(f"note: {override} is set, so tasks read {os.environ[override]}, not the folder fetched into",
              file=sys.stderr)
    states = fetch(args.name, root, args.source, timeout=args.timeout,
                   report=lambda line: print(f"{args.name}/{line}", file=sys.stderr))
    print(json.dumps({"dataset": args.name, "folder": str((root or data_home()) / args.name),
                      "files": len(states), "status": "verified"}))
    return 0
