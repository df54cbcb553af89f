"""MiniHack's levels compiled with one process instead of six: the same level archive, resets twice as fast.

Why: MiniHack installs each new level description (a fresh MultiRoom layout on every reset, a task's
``.des`` file once) by calling a shell script that starts six processes (bash, cp, lev_comp, rm, dlb,
mv). On the reference VM that took 26-27 ms per reset, which makes resets most of a MultiRoom rollout
worker's time. Here the level compiler (``lev_comp``) runs directly and the rest is Python's: the copies,
the move and the level library itself (``dlb_archive``, NetHack's ``dlb cf``): a MultiRoom reset took
15.9 ms against the script's 36.2 (``tests/perf/bench_minihack.py --levels``). The ``nhdat`` archive
written is byte for byte the script's (``tests/unit/test_minihack_level_patch.py``), so every level, and
the distribution of levels, is unchanged. Unlike the script, a compiler that fails raises instead of
leaving the previous level in place.

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
    archive = dlb_archive([(name, (lib / name).read_bytes()) for name in members])
    partial = vardir / ".nhdat.partial"
    partial.write_bytes(archive)
    os.replace(partial, vardir / "nhdat")  # the script's `mv`: the game never reads half an archive


def dlb_archive(members: list[tuple[str, bytes]]) -> bytes:
    """NetHack's level library (``dlb cf``, version 1) of ``members`` (name, content), in their order: a text
    directory (a header line ``version entries names-size directory-size total-size``, then ``n<name>
    <offset>`` per entry, the directory itself first at offset 0), then the files back to back. The directory's
    size and the offsets depend on each other's printed widths, so the size is found by iterating."""
    names = ["Directory", *(name for name, _ in members)]
    names_size = sum(len(name) for name in names) + len(names)  # each name and its terminating null
    directory_size, text = 0, ""
    while True:
        offsets, end = [0], directory_size
        for _, content in members:
            offsets.append(end)
            end += len(content)
        text = f"{1:3d} {len(names):8d} {names_size:8d} {directory_size:8d} {end:8d}\n" + "".join(
            f"n{name} {offset:8d}\n" for name, offset in zip(names, offsets))
        if len(text) == directory_size:
            return text.encode("latin-1") + b"".join(content for _, content in members)
        directory_size = len(text)


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
