#!/usr/bin/env bash
# Print the path of a working Python X.Y interpreter, or exit 1 without output.
#
#   scripts/find_python.sh 3.13
#
# Tries, in order: $PYTHON_FOR_CHECK, `pythonX.Y` on PATH (only if it runs: a pyenv shim for a version that is
# installed but not selected is on PATH and fails), then the newest X.Y.* under pyenv's versions folder.
set -uo pipefail
WANTED=${1:?usage: scripts/find_python.sh X.Y}
for candidate in ${PYTHON_FOR_CHECK:-} "python$WANTED" \
        $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$WANTED".*/bin/python3 2>/dev/null | sort -V -r); do
    [ -n "$candidate" ] || continue
    if "$candidate" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$WANTED' else 1)" 2>/dev/null
    then
        # the interpreter itself, so that a shim's later resolution cannot change it
        "$candidate" -c 'import sys; print(sys.executable)'
        exit 0
    fi
done
exit 1
