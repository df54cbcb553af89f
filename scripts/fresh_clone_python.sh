#!/usr/bin/env bash
# CI check that a fresh clone sets up and trains with a given Python (3.13 by default: the newest one
# llmexplore supports, the default of current distributions). Clone this checkout (its committed state)
# into an empty temporary folder, run `PYTHON=<python> scripts/setup.sh` there into a new venv, then train
# a NetHack (with two rollout worker processes), a MiniHack and a Crafter cell of STEPS (4,096) steps each with that venv in a clean
# environment (empty HOME, LLMEXPLORE_* unset), and time the set-up and the runs. The set-up uses the
# caller's pip cache, as a user's would.
#
# The interpreter: what scripts/find_python.sh finds for FRESH_CLONE_PYTHON_VERSION (PYTHON_FOR_CHECK if set,
# else a `python3.13` on PATH that runs, else the newest such version under pyenv's versions folder). Without
# one the check says so in one line and passes.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${FRESH_CLONE_STEPS:-4096}
WANTED=${FRESH_CLONE_PYTHON_VERSION:-3.13}

if ! PY=$("$REPO/scripts/find_python.sh" "$WANTED"); then
    echo "python $WANTED check: skipped, no Python $WANTED on this machine (set PYTHON_FOR_CHECK to one)"
    exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmexplore-python.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git clone --quiet "$REPO" "$WORK/llmexplore"
mkdir "$WORK/home"
CLONE=$WORK/llmexplore
VENV=$WORK/venv
cd "$CLONE"

echo "python $WANTED check: $PY ($("$PY" -V 2>&1)), set-up of a fresh clone into a new venv"
start=$SECONDS
PYTHON=$PY LLMEXPLORE_VENV=$VENV scripts/setup.sh
setup_s=$((SECONDS - start))

in_clone() {
    env -i PATH="$VENV/bin:/usr/bin:/bin" HOME="$WORK/home" LANG=C.UTF-8 \
        LLMEXPLORE_SF_QUIET=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$@"
}
in_clone python - "$WANTED" <<'PY'
import pathlib
import sys
from importlib import metadata

import llmexplore

here = pathlib.Path.cwd().resolve()
assert "%d.%d" % sys.version_info[:2] == sys.argv[1], sys.version
assert pathlib.Path(llmexplore.__file__).resolve().is_relative_to(here), f"imported {llmexplore.__file__}"
versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("numpy", "gymnasium", "nle", "torch",
                                                                      "sample-factory"))
print(f"python check: llmexplore from {here} on Python {sys.version.split()[0]}: {versions}")
PY
start=$SECONDS
pids=()
# NetHack with two rollout worker processes: what sample-factory spawns must get its mends too (numpy 2.4)
in_clone llmexplore run --method none --task nethack:score --seed 0 --steps "$STEPS" -t batch_size=1024 \
    -t num_workers=2 --out runs/nethack --quiet & pids+=($!)
for task in minihack:keyroom-s5 crafter:reward-free; do
    in_clone llmexplore run --method none --task "$task" --seed 0 --steps "$STEPS" -t batch_size=1024 \
        --out "runs/${task%%:*}" --quiet & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
in_clone python - <<'PY'
import json
import pathlib

for family in ("nethack", "minihack", "crafter"):
    records = list(pathlib.Path("runs", family).rglob("run.json"))
    assert len(records) == 1, (family, records)
    record = json.loads(records[0].read_text())
    assert record.get("status") == "complete", (family, record.get("status"))
    print(f"python check: {family}: {record['env_steps']} steps trained, run.json status complete")
PY
echo "python $WANTED check: set-up ${setup_s} s, three ${STEPS}-step runs (side by side)" \
     "$((SECONDS - start)) s"
