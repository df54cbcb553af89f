#!/usr/bin/env bash
# Create a virtual environment (.venv) and install llmexplore with every extra, on Python 3.10-3.13
# (PYTHON=python3.13 scripts/setup.sh picks the interpreter, LLMEXPLORE_VENV the folder).
#
# Two pip runs, both plain pip (docs/INSTALL.md says why): `pip install -e ".[all,test]"` installs
# llmexplore and every requirement, sample-factory's real ones included; then
# `pip install --no-deps sample-factory==2.1.1` adds the engine without its stale pins (numpy < 2,
# gymnasium < 1, huggingface-hub < 1), which no current NLE or Python 3.13 can satisfy.
#
# LLMEXPLORE_CONSTRAINTS=FILE passes a pip constraints file to every pip run, for instance
# scripts/previous_stack_constraints.txt (NLE 1.0.0, numpy 1: the stack of the committed NetHack tables).
#
# Without an NVIDIA GPU, PyTorch's 2.13.0 CPU build is installed first where the package index has one
# for this interpreter (set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu to use PyTorch's own);
# elsewhere pip installs its default build, which runs on a CPU too.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${LLMEXPLORE_VENV:-.venv}
SAMPLE_FACTORY="sample-factory==2.1.1"  # llmexplore/agents/sf_private.py: SUPPORTED_VERSION
CONSTRAINTS=${LLMEXPLORE_CONSTRAINTS:-}
if [ -n "$CONSTRAINTS" ] && [ ! -f "$CONSTRAINTS" ]; then
    echo "setup: LLMEXPLORE_CONSTRAINTS names $CONSTRAINTS, which is not a file" >&2
    exit 2
fi

# PYTHON=python3.13 where that name is a pyenv shim of a version installed but not selected: it does not run,
# and the interpreter under pyenv's versions folder is what was meant
if ! "$PYTHON" -c '' 2>/dev/null && [[ $PYTHON =~ ^python([0-9]+\.[0-9]+)$ ]] \
        && found=$(scripts/find_python.sh "${BASH_REMATCH[1]}"); then
    echo "setup: $PYTHON does not run here (a pyenv shim of a version not selected?); using $found"
    PYTHON=$found
fi
# older than 3.10 lacks syntax llmexplore uses; 3.14 lacks wheels of nle and torch: refuse at once
if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)' 2>/dev/null; then
    found=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo "none at '$PYTHON'")
    echo "setup: llmexplore needs Python 3.10-3.13 (found $found): nle and torch publish no wheels for" \
         "other versions. Run with PYTHON=python3.13 (or 3.12, 3.11, 3.10) scripts/setup.sh" >&2
    exit 2
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating the virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
# what the last complete install was made from: an unchanged pyproject.toml and interpreter need no pip run
stamp="$VENV/.llmexplore-setup"
wanted="$(python -c 'import sys; print(sys.version.split()[0])') $(sha256sum pyproject.toml | cut -d' ' -f1)"
[ -z "$CONSTRAINTS" ] || wanted="$wanted $(sha256sum "$CONSTRAINTS" | cut -d' ' -f1)"
constrain=()
[ -z "$CONSTRAINTS" ] || constrain=(-c "$CONSTRAINTS")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && python -c 'import llmexplore, sample_factory' 2>/dev/null
then
    echo "setup: $VENV is up to date with pyproject.toml (pip skipped; delete $stamp to reinstall)"
    exit 0
fi
echo "setup: upgrading pip"
python -m pip install --quiet --upgrade pip
if ! command -v nvidia-smi >/dev/null 2>&1 && ! python -c "import torch" >/dev/null 2>&1; then
    if python -m pip install --quiet ${constrain[@]+"${constrain[@]}"} "torch==2.13.0+cpu" \
            ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} 2>/dev/null; then
        echo "setup: installed PyTorch 2.13.0's CPU build"
    else
        echo "setup: no CPU build of PyTorch on this index for this Python: pip installs its default build" \
             "(a download of about 3 GB the first time; it runs on a CPU too)"
    fi
fi
echo "setup: installing llmexplore with every extra (about 150 packages: minutes, about 10 the first time on" \
     "a busy 2-core machine; pip runs quietly)"
python -m pip install --quiet ${constrain[@]+"${constrain[@]}"} -e ".[all,test]"
echo "setup: installing $SAMPLE_FACTORY without its stale pins (pip install --no-deps)"
python -m pip install --quiet --no-deps "$SAMPLE_FACTORY"
echo "$wanted" > "$stamp"
echo "llmexplore installed in $VENV ($(python -c 'import llmexplore; print(llmexplore.__version__)'))"
