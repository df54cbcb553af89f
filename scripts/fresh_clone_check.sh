#!/usr/bin/env bash
# CI check that the README's main job needs nothing beside the checkout: clone this checkout (its
# committed state) into an empty temporary folder, so no shared/ folder is beside the clone, and with
# HOME empty, LLMEXPLORE_* unset and no network use, train a NetHack and a Crafter cell of about 2,000
# steps there and build their leaderboard. The installed venv is reused (no reinstall) with PYTHONPATH
# at the clone, so the clone's code and package data are what runs.
#
# With a local copy of Housekeep's data (HOUSEKEEP_COPY, default: shared/data beside this checkout, if
# there), it also fills the clone's data folder with `llmexplore data fetch housekeep --from COPY` and
# trains a Housekeep cell.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${LLMEXPLORE_VENV:-$REPO/.venv}
case $VENV in /*) ;; *) VENV=$REPO/$VENV ;; esac
STEPS=${FRESH_CLONE_STEPS:-2000}
COPY=${HOUSEKEEP_COPY:-$REPO/../shared/data}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmexplore-fresh.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git clone --quiet "$REPO" "$WORK/llmexplore"
mkdir "$WORK/home"
CLONE=$WORK/llmexplore
cd "$CLONE"

# a clean environment: only what a new user has, plus the interpreter and the clone on the path
in_clone() {
    env -i PATH="$VENV/bin:/usr/bin:/bin" HOME="$WORK/home" PYTHONPATH="$CLONE" LANG=C.UTF-8 \
        LLMEXPLORE_SF_QUIET=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$@"
}

in_clone python - <<'PY'
import pathlib
import llmexplore
from llmexplore import settings

here = pathlib.Path.cwd().resolve()
assert pathlib.Path(llmexplore.__file__).resolve().is_relative_to(here), f"imported {llmexplore.__file__}"
assert not (here.parent / "shared").exists() and settings._dev_data_root() is None, "a shared/ folder is visible"
print(f"fresh clone: llmexplore from {here}, data folder {settings.data_home()}")
PY

start=$SECONDS
if [ -d "$COPY/housekeep" ]; then
    in_clone llmexplore data fetch housekeep --from "$COPY" 2>/dev/null
    status=$(in_clone llmexplore data list --json)
    [[ $status == *'"status": "verified"'* ]] || { echo "$status"; exit 1; }
    echo "fresh clone: Housekeep's data fetched from $COPY and verified"
else
    echo "fresh clone: no local copy of Housekeep's data at $COPY; the Housekeep cell is skipped"
fi

# the cells run side by side (one core each on a 2-core machine); each writes its own run folder
pids=()
in_clone llmexplore run --method none --task nethack:score --seed 0 --steps "$STEPS" -t batch_size=1024 \
    --out runs/nethack --quiet & pids+=($!)
in_clone llmexplore run --method rnd --task crafter:reward-free --seed 0 --steps "$STEPS" -t batch_size=1024 \
    --out runs/crafter --quiet & pids+=($!)
if [ -d "$COPY/housekeep" ]; then
    in_clone llmexplore run --method none --task housekeep:pomaria_0 --seed 0 --steps "$STEPS" \
        -t batch_size=1024 --out runs/housekeep --quiet & pids+=($!)
fi
for pid in "${pids[@]}"; do wait "$pid"; done
in_clone llmexplore leaderboard runs --out leaderboard >/dev/null
test -s leaderboard/leaderboard.md
echo "fresh clone: cells and their leaderboard in $((SECONDS - start)) s"
