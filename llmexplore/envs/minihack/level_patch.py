"""MiniHack's level compiler run directly: the same level archive in about a third of the time.

Why: MiniHack installs each new level description (a fresh MultiRoom layout on every reset, a task's
``.des`` file once) by calling a shell script that starts six processes (bash, cp, lev_comp, rm, dlb,
mv). On the reference VM that took 26-27 ms per reset, which makes resets most of a MultiRoom rollout
worker's time. Here the two compilers (``lev_comp``, then ``dlb``) run directly and the copies and
moves are Python's: 7-11 ms, and the ``nhdat`` archive written is byte for byte the script's
(``tests/unit/test_minihack_level_patch.py``), so every level, and the distribution of levels, is
unchanged. Unlike the script, a compiler that fails raises instead of leaving the previous level in
place.

It reproduces ``scripts/mh_patch_nhdat.sh`` of minihack 1.0.2 (the version llmexplore pins); with any
other version MiniHack's own script stays in use (``install``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import types
from pathlib import Path
from typing import Any

#: the MiniHack release whose patch script this module reproduces
REPRODUCED_VERSION = "1.0.2"
#: the name the script gives the level description it compiles (its .lev file is named by the des itself)
DES_NAME = "mylevel.des"


def install(env: Any) -> bool:
    """Give one MiniHack env (``minihack.base.MiniHack``) this patcher in place of its script; False (and
    nothing changed) for another MiniHack version or an env without the script's hook."""
    from llmexplore.envs.minihack.compat import MINIHACK_VERSION

    if MINIHACK_VERSION != REPRODUCED_VERSION or not callable(getattr(env, "_patch_nhdat", None)):
        return False
    env._patch_nhdat = types.MethodType(patch_nhdat, env)
    return True


def patch_nhdat(env: Any, des_file: str) -> None:
    """Compile ``des_file`` (a path, a name under MiniHack's ``dat`` folder, or the description itself) into
    the env's level archive ``<vardir>/nhdat``, as MiniHack's script does."""
    import minihack.base as minihack_base

    vardir = Path(env.nethack._vardir)
    lib = vardir / "lib"
    if not lib.is_dir():  # the script's first call copies MiniHack's level library beside the game
        shutil.copytree(minihack_base.LIB_DIR, lib)
    _write_description(des_file, vardir, lib / DES_NAME, Path(minihack_base.PATH_DAT_DIR))
    hackdir = Path(minihack_base.HACKDIR)
    try:
        _compile(hackdir / "lev_comp", [DES_NAME], lib, des_file)
    finally:
        (lib / DES_NAME).unlink(missing_ok=True)
    members = sorted(name for name in os.listdir(lib) if not name.startswith("."))  # the script's `*`
    _compile(hackdir / "dlb", ["cf", "nhdat", *members], lib, des_file)
    os.replace(lib / "nhdat", vardir / "nhdat")


def _write_description(des_file: str, vardir: Path, target: Path, dat_dir: Path) -> None:
    """Put the level description at ``target``: a text description is also kept at ``<vardir>/mylevel.des``
    (where MiniHack writes it), a path is copied, a bare name is looked up in MiniHack's ``dat`` folder."""
    if not des_file.endswith(".des"):
        (vardir / DES_NAME).write_text(des_file)
        target.write_text(des_file)
        return
    source = Path(os.path.abspath(des_file))
    if not source.exists():
        source = Path(os.path.abspath(dat_dir / des_file))
    if not source.exists():
        raise FileNotFoundError(f"MiniHack level description {des_file} not found (nor under {dat_dir})")
    shutil.copyfile(source, target)


def _compile(program: Path, args: list[str], cwd: Path, des_file: str) -> None:
    """Run one of NetHack's level tools in ``cwd``; RuntimeError with its output when it fails."""
    done = subprocess.run([str(program), *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shown = des_file if des_file.endswith(".des") else "the generated level description"
        raise RuntimeError(f"{program.name} failed ({done.returncode}) on {shown}: "
                           f"{(done.stdout + done.stderr).strip()[-2000:]}")
