"""Download and verify the catalog's datasets: resumable, checksummed, never half-written.

A file is downloaded into ``<file>.part`` beside its final place; a cut-off download keeps
the part and the next attempt asks the server for the rest (HTTP Range). Only a part whose
sha256 matches the pin is renamed into place, so a file under its final name is always
complete. Files already present are checked by their sha256 and fetched again when they
differ. ``source`` (``--from``) replaces upstream with a mirror URL or a local folder laid
out like the data folder (``<source>/<dataset>/<file>``, or the dataset's own folder).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException, IncompleteRead
from pathlib import Path
from typing import Callable

from llmexplore.atomic import file_sha256
from llmexplore.data.catalog import DataFile, Dataset, dataset, fetch_command
from llmexplore.errors import DataError
from llmexplore.settings import DATA_ENV, data_home

CHUNK = 1 << 20
#: attempts per file when the connection is cut: each one resumes from the part already written
ATTEMPTS = 3
Report = Callable[[str], None]



def part_path(target: Path) -> Path:
    """Where ``target`` is downloaded to (``<name>.part`` beside it) until its checksum matches."""
    return target.with_name(target.name + ".part")


@dataclass(frozen=True)
class FileState:
    file: DataFile
    path: Path
    state: str  # verified | missing | corrupt | partial


def file_state(file: DataFile, folder: Path) -> FileState:
    """One file's state in ``folder``: verified or corrupt by its sha256 when present (the whole file is
    read), else partial when a ``.part`` waits, else missing."""
    path = folder / file.path
    if path.is_file():
        return FileState(file, path, "verified" if file_sha256(path) == file.sha256 else "corrupt")
    return FileState(file, path, "partial" if part_path(path).is_file() else "missing")


def dataset_state(info: Dataset, folder: Path) -> list[FileState]:
    """The state of every file of a dataset in ``folder`` (the dataset's own folder)."""
    return [file_state(f, folder) for f in info.files]


def fetch(name: str, root: Path | None = None, source: str | None = None, *,
          report: Report = lambda line: None, timeout: float = 30.0) -> list[FileState]:
    """Make every file of dataset ``name`` present and verified under ``root/name``."""
    info = dataset(name)
    folder = (root or data_home()) / info.name
    _ensure_writable(folder)
    states = []
    for file in info.files:
        state = file_state(file, folder)
        if state.state == "verified":
            report(f"{file.path}: present, sha256 verified")
        else:
            if state.state == "corrupt":  # removed first: a task must never read it if the fetch fails
                report(f"{file.path}: sha256 differs from the pinned file, fetching it again")
                state.path.unlink()
            origin = _origin(info, file, source)
            _fetch_file(info, file, origin, state.path, report, timeout)
            report(f"{file.path}: fetched, sha256 verified")
        states.append(FileState(file, state.path, "verified"))
    return states


# -- one file ----------------------------------------------------------------------------------
def _fetch_file(info: Dataset, file: DataFile, origin: str, target: Path, report: Report,
                timeout: float) -> None:
    part = part_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if _is_url(origin):
            _download(origin, part, file, report, timeout)
        else:
            _copy(Path(origin), part)
    except OSError as exc:  # network errors became DataErrors in _download: this is the disk
        raise _write_error(target.parent, exc) from exc
    digest = file_sha256(part)
    if digest != file.sha256:
        part.unlink()
        raise DataError(
            f"checksum mismatch for {info.name}/{file.path} from {origin}: sha256 {digest}, "
            f"expected the pinned {file.sha256} (the damaged download was deleted)",
            hint=f"run `{fetch_command(info.name)}` again; if it repeats, the source holds a different "
                 "version of the file: fetch from upstream (no --from) or from a copy that matches",
        )
    with open(part, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(part, target)


def _download(url: str, part: Path, file: DataFile, report: Report, timeout: float) -> None:
    for attempt in range(1, ATTEMPTS + 1):
        have = part.stat().st_size if part.exists() else 0
        if have >= file.size:  # a complete (or overlong) part left by an earlier run: check it as it is
            if have == file.size:
                return
            part.unlink()
            have = 0
        try:
            _download_once(url, part, have, timeout)
            return
        except (urllib.error.HTTPError, urllib.error.URLError) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code == 416 and have:
                part.unlink()  # the server cannot serve the rest of what we have: start over
                continue
            raise _reach_error(url, exc) from exc
        except (HTTPException, ConnectionError, socket.timeout) as exc:
            got = part.stat().st_size if part.exists() else 0
            report(f"{file.path}: connection cut after {got:,} of {file.size:,} bytes "
                   f"({type(exc).__name__}); " + ("resuming" if attempt < ATTEMPTS else "giving up"))
            if attempt == ATTEMPTS:
                raise DataError(
                    f"download of {url} was cut off {ATTEMPTS} times "
                    f"({got:,} of {file.size:,} bytes kept in {part})",
                    hint="run the same command again: it resumes from the partial file",
                ) from exc


def _download_once(url: str, part: Path, have: int, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "llmexplore-data"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        resumed = have and response.status == 206
        expected = response.headers.get("Content-Length")
        received = 0
        with open(part, "ab" if resumed else "wb") as out:
            for block in iter(lambda: response.read(CHUNK), b""):
                out.write(block)
                out.flush()
                received += len(block)
        if expected is not None and received < int(expected):  # http.client reads a dropped connection as EOF
            raise IncompleteRead(b"", int(expected) - received)


def _copy(source: Path, part: Path) -> None:
    if not source.is_file():
        raise DataError(f"{source} does not exist",
                        hint="--from must name a copy laid out as <folder>/<dataset>/<file>")
    with open(source, "rb") as src, open(part, "wb") as out:
        shutil.copyfileobj(src, out, CHUNK)


# -- where from, where to ------------------------------------------------------------------------
def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _origin(info: Dataset, file: DataFile, source: str | None) -> str:
    """The upstream URL, or the file's place in a mirror URL or a local copy."""
    if source is None:
        return info.url(file)
    if _is_url(source):
        return f"{source.rstrip('/')}/{info.name}/{file.path}"
    base = Path(source).expanduser()
    if not base.is_dir():
        raise DataError(f"--from {source}: no such folder",
                        hint="give a folder holding <dataset>/<file>, or a URL")
    for candidate in (base / info.name / file.path, base / file.path):
        if candidate.is_file():
            return str(candidate)
    raise DataError(f"--from {source}: {info.name}/{file.path} is not there",
                    hint=f"the copy must be laid out like the data folder: {base}/{info.name}/{file.path}")


def _ensure_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise _write_error(folder, exc) from exc


def _write_error(folder: Path, exc: OSError) -> DataError:
    return DataError(f"cannot write to the data folder {folder}: {exc.strerror or exc}",
                     hint=f"set {DATA_ENV} to a writable folder (or pass --dir), then fetch again")


def _reach_error(url: str, exc: urllib.error.URLError) -> DataError:
    if isinstance(exc, urllib.error.HTTPError):
        return DataError(f"{url}: HTTP {exc.code} {exc.reason}",
                         hint="the source does not serve this file: check --from (a mirror must be laid "
                              "out as <url>/<dataset>/<file>), or drop --from to fetch from upstream")
    return DataError(f"cannot reach {url}: {exc.reason}",
                     hint="check the network connection; on an offline machine copy the data from a "
                          "machine that has it and use --from <folder>")
