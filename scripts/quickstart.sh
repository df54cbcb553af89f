#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: the small grid in configs/quickstart.yaml,
# then its leaderboard under results/quickstart/leaderboard/. Rerunning resumes.
# JOBS=<n> sets how many cells run at once (default: one per CPU core).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# shellcheck disable=SC1091
source "${LLMEXPLORE_VENV:-.venv}/bin/activate"
llmexplore grid configs/quickstart.yaml --jobs "${JOBS:-$(nproc)}" "$@"
echo "leaderboard: results/quickstart/leaderboard/index.html (and leaderboard.md)"
