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

named=0
for arg in "$@"; do
    [[ $arg != -* && -e ${arg%%::*} ]] && named=1  # the caller named what to run
done
echo "test: the whole suite is ~1,100 unit tests (2-10 minutes on 2 cores, two at a time, the more the busier the machine)," \
     "then ~180 integration tests, 70 of them slow ones that train agents (about 25 minutes more); the fast" \
     "subset alone (everything not marked slow): scripts/test.sh -m \"not slow\". Progress: a line per test" \
     "file with the percentage done; the slowest tests are listed at the end."
if (( named )); then
    exec python -m pytest "$@"
fi
# the unit tests on LLMEXPLORE_TEST_WORKERS processes (default 2: they train nothing, so the cores share them),
# then the integration tests one at a time (each trains agents with the machine's cores); both always run
workers=${LLMEXPLORE_TEST_WORKERS:-2}
unit_rc=0
if [[ $workers =~ ^[0-9]+$ ]] && (( workers > 1 )); then
    python -m pytest tests/unit -n "$workers" "$@" || unit_rc=$?
else
    python -m pytest tests/unit "$@" || unit_rc=$?
fi
integration_rc=0
python -m pytest tests/integration "$@" || integration_rc=$?
# pytest's 5 (nothing collected, e.g. -m selecting none of one half) is not a failure of the other half
(( unit_rc == 5 )) && unit_rc=0
(( integration_rc == 5 )) && integration_rc=0
exit $(( unit_rc != 0 ? unit_rc : integration_rc ))
