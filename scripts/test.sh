#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite: the unit tests first (fast feedback), then the
# integration tests, which train agents (marked `slow`). Extra arguments go to pytest; the fast subset
# alone is `scripts/test.sh -m "not slow"`. With paths among the arguments, pytest runs those as given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# shellcheck disable=SC1091
source "${LLMEXPLORE_VENV:-.venv}/bin/activate"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

paths=(tests/unit tests/integration)
for arg in "$@"; do
    [[ $arg != -* && -e ${arg%%::*} ]] && paths=()  # the caller named what to run
done
echo "test: the whole suite is ~1,000 unit tests (5-15 minutes on 2 cores, the more the busier the machine)," \
     "then ~180 integration tests, 70 of them slow ones that train agents (about 25 minutes more); the fast" \
     "subset alone (everything not marked slow): scripts/test.sh -m \"not slow\". Progress: a line per test" \
     "file with the percentage done; the slowest tests are listed at the end."
python -m pytest "${paths[@]}" "$@"
