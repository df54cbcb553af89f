#!/usr/bin/env bash
# Create a virtual environment (.venv) and install llmexplore with every extra.
#
# Without an NVIDIA GPU, PyTorch's CPU build (2.13.0) is installed first, so that pip
# never pulls multi-GB CUDA wheels: set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# on machines whose default index serves CUDA builds. With a GPU the project's torch range
# is satisfied by whatever CUDA build pip picks.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${LLMEXPLORE_VENV:-.venv}

# sample-factory 2.1.1 needs numpy < 2, which has no wheels for Python 3.13 and newer (and older than
# 3.10 is not supported): refuse at once, before minutes of failing builds.
if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)' 2>/dev/null; then
    found=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo "none at '$PYTHON'")
    echo "setup: llmexplore needs Python 3.10-3.12 (found $found): sample-factory 2.1.1 requires numpy < 2," \
         "which has no wheels for Python 3.13. Run with PYTHON=python3.12 (or 3.11, 3.10) scripts/setup.sh" >&2
    exit 2
fi
# nle 1.0.0 ships no wheel for Python 3.12, so pip builds it from source: name what the build needs first,
# instead of a compiler error minutes in.
if "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' \
        && ! "$PYTHON" -c 'import nle' 2>/dev/null; then
    missing=()
    for tool in cc c++ cmake flex bison; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    [ -f /usr/include/bzlib.h ] || missing+=("bzip2 headers")
    if (( ${#missing[@]} )); then
        echo "setup: with Python 3.12, nle 1.0.0 is built from source and needs ${missing[*]}, which this" \
             "machine lacks. On Debian/Ubuntu: apt-get install build-essential cmake flex bison libbz2-dev;" \
             "or use Python 3.10/3.11 (PYTHON=python3.11 scripts/setup.sh), for which nle has wheels." >&2
        exit 2
    fi
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
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && python -c 'import llmexplore' 2>/dev/null; then
    echo "setup: $VENV is up to date with pyproject.toml (pip skipped; delete $stamp to reinstall)"
    exit 0
fi
echo "setup: upgrading pip"
python -m pip install --quiet --upgrade pip
if ! command -v nvidia-smi >/dev/null 2>&1 && ! python -c "import torch" >/dev/null 2>&1; then
    echo "setup: installing PyTorch 2.13.0's CPU build (a download of a few hundred MB: minutes on a slow link)"
    python -m pip install --quiet "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
fi
echo "setup: installing llmexplore with every extra (about 150 packages; minutes the first time, much" \
     "longer on Python 3.12, where nle is built from source; pip runs quietly)"
python -m pip install --quiet -e ".[all,test]"
echo "$wanted" > "$stamp"
echo "llmexplore installed in $VENV ($(python -c 'import llmexplore; print(llmexplore.__version__)'))"
