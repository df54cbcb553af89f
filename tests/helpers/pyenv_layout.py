"""A pyenv layout as these machines have it: `pythonX.Y` on PATH is a shim that fails (the version is installed
but not selected), and the interpreter itself sits under PYENV_ROOT/versions/X.Y.*/bin."""

from __future__ import annotations

import sys
from pathlib import Path


def unselected_pyenv_python(tmp_path: Path) -> tuple[str, Path, Path]:
    """(this interpreter's "X.Y", a bin folder holding the failing `pythonX.Y` shim, the installed python3 under
    tmp_path/pyenv, a link to this interpreter)."""
    wanted = "%d.%d" % sys.version_info[:2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / f"python{wanted}"
    shim.write_text("#!/bin/sh\necho \"pyenv: $0: command not found\" >&2\nexit 127\n")
    shim.chmod(0o755)
    installed = tmp_path / "pyenv" / "versions" / f"{wanted}.9" / "bin" / "python3"
    installed.parent.mkdir(parents=True)
    installed.symlink_to(sys.executable)
    return wanted, bin_dir, installed
