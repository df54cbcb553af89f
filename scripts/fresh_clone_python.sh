#!/usr/bin/env bash
# CI check that the Python 3.12 path stays green: nle 1.0.0 has no wheel for 3.12, so pip builds it from
# source. Clone this checkout (its committed state) into an empty temporary folder, run
# `PYTHON=<python3.12> scripts/setup.sh` there into a new venv, then train a NetHack cell of about 2,000
# steps with that venv in a clean environment (empty HOME, LLMEXPLORE_* unset), and time both. The set-up
# uses the caller's pip cache, as a user's would: after a first build, pip reuses its nle wheel.
#
# The interpreter: PYTHON312 if set, else a `python3.12` on PATH that runs, else the newest 3.12 under
# pyenv's versions folder. Without one the check says so in one line and passes. Where nle's build tools
# are missing and the machine allows it (root, apt-get), they are installed first, as the SLURM packages
# are in .ci/run; elsewhere setup.sh names them and this check fails.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${FRESH_CLONE_STEPS:-2000}

find_python312() {
    local candidate
    for candidate in ${PYTHON312:-} python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
        [ -n "$candidate" ] || continue
        if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null; then
            command -v "$candidate" || echo "$candidate"
            return 0
        fi
    done
    return 1
}

if ! PY312=$(find_python312 | tail -n 1); then
    echo "python 3.12 check: skipped, no Python 3.12 on this machine (set PYTHON312 to one)"
    exit 0
fi

missing=()
for tool in cc c++ cmake flex bison; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ -f /usr/include/bzlib.h ] || missing+=(libbz2-dev)
if (( ${#missing[@]} )) && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "python 3.12 check: installing nle's build tools (${missing[*]})"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential cmake flex bison libbz2-dev >/dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmexplore-py312.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git clone --quiet "$REPO" "$WORK/llmexplore"
mkdir "$WORK/home"
CLONE=$WORK/llmexplore
VENV=$WORK/venv
cd "$CLONE"

echo "python 3.12 check: $PY312 ($("$PY312" -V 2>&1)), set-up of a fresh clone into a new venv"
start=$SECONDS
PYTHON=$PY312 LLMEXPLORE_VENV=$VENV scripts/setup.sh
setup_s=$((SECONDS - start))

in_clone() {
    env -i PATH="$VENV/bin:/usr/bin:/bin" HOME="$WORK/home" LANG=C.UTF-8 \
        LLMEXPLORE_SF_QUIET=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$@"
}
in_clone python - <<'PY'
import pathlib
import sys
import llmexplore
import nle

here = pathlib.Path.cwd().resolve()
assert sys.version_info[:2] == (3, 12), sys.version
assert pathlib.Path(llmexplore.__file__).resolve().is_relative_to(here), f"imported {llmexplore.__file__}"
print(f"python 3.12 check: llmexplore from {here}, nle {nle.__version__} on Python {sys.version.split()[0]}")
PY
start=$SECONDS
in_clone llmexplore run --method none --task nethack:score --seed 0 --steps "$STEPS" -t batch_size=1024 \
    --out runs/nethack --quiet
in_clone python - <<'PY'
import json
import pathlib

records = list(pathlib.Path("runs/nethack").rglob("run.json"))
assert len(records) == 1, records
record = json.loads(records[0].read_text())
assert record.get("status") == "complete", record.get("status")
print(f"python 3.12 check: {record['env_steps']} NetHack steps trained, run.json status complete")
PY
echo "python 3.12 check: set-up ${setup_s} s (nle built from source, or its wheel from pip's cache of an" \
     "earlier build), ${STEPS}-step NetHack run $((SECONDS - start)) s"
