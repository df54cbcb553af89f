#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: the small grid in configs/quickstart.yaml,
# then its leaderboard under results/quickstart/leaderboard/ (the grid names its files when done).
# Rerunning resumes. JOBS=<n> sets how many cells run at once (default: one per CPU core).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# shellcheck disable=SC1091
source "${LLMEXPLORE_VENV:-.venv}/bin/activate"
echo "quickstart: 8 cells (none and RND on NetHack Score and reward-free Crafter, 2 seeds), about ten minutes" \
     "on 2 CPU cores; finished cells are kept when rerun"
llmexplore grid configs/quickstart.yaml --jobs "${JOBS:-$(nproc)}" "$@"
