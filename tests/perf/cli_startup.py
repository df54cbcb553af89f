"""Start-up time of `llmexplore --help`, `envs`, `methods` and `grid --dry-run`: this tree against a baseline.

    PYTHONPATH=. python tests/perf/cli_startup.py --baseline /path/to/old/checkout [--repeats 5]

Each command runs in a fresh interpreter, the two trees interleaved so machine load affects both
alike; prints the median wall time per command, the ratio baseline / this tree, and the median CPU
time (user + system) of this tree's command, which a busy shared machine inflates less than wall time. Make a
baseline tree with e.g. `git archive <commit> | tar -x -C /tmp/base`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMANDS = (["--help"], ["envs"], ["methods"], ["grid", "configs/quickstart.yaml", "--dry-run"])


def once(tree: Path, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # run from the tree itself: `python -m` puts the working directory first on sys.path
    subprocess.run([sys.executable, "-m", "llmexplore", *args], env=env, cwd=tree, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", required=True, type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'command':22} {'baseline s':>10} {'this s':>8} {'ratio':>6} {'base cpu':>8} {'this cpu':>8}"
          f"   (medians of {args.repeats}; load average {os.getloadavg()[0]:.1f})")
    for command in COMMANDS:
        base, this = [], []
        for _ in range(args.repeats):
            base.append(once(args.baseline, command))
            this.append(once(REPO, command))
        b, t = (statistics.median(w for w, _ in runs) for runs in (base, this))
        bc, tc = (statistics.median(c for _, c in runs) for runs in (base, this))
        print(f"{' '.join(command)[:22]:22} {b:10.2f} {t:8.2f} {b / t:6.2f} {bc:8.2f} {tc:8.2f}")


if __name__ == "__main__":
    main()
