"""Crash-safe file writes: nothing already written is lost or half-written."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes files private; results are meant to be shared
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 text so that readers see the old file or the new one, never a part."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write an object as indented JSON, atomically (numpy values and paths become plain JSON)."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    # numpy scalars and arrays show up in metrics; write them as plain JSON.
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps_line(obj: Any) -> str:
    """One JSON line of a .jsonl file (numpy values and paths become plain JSON)."""
    return json.dumps(obj, default=_json_default) + "\n"


class JsonlAppender:
    """Appends one JSON object per line, flushed at once, so a kill loses at most the current line.

    A line a kill left torn at the end of the file is cut off when the file is opened again: appending
    after it would glue the next row onto it, and a torn line in the middle of a log would then stop
    every reader."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, obj: Any) -> None:
        """Append one row and flush it, so a crash loses at most the line being written."""
        self._fh.write(dumps_line(obj))
        self._fh.flush()

    def close(self) -> None:
        """Close the file; closing twice is harmless."""
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Truncate ``path`` after its last newline when its last line is unfinished (a kill mid-append)."""
    try:
        fh = open(path, "r+b")
    except FileNotFoundError:
        return
    with fh:
        end = fh.seek(0, os.SEEK_END)
        if end == 0:
            return
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        pos = end
        while pos > 0:  # back to the last newline, a block at a time
            start = max(0, pos - 65536)
            fh.seek(start)
            block = fh.read(pos - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                fh.truncate(start + cut + 1)
                return
            pos = start
        fh.truncate(0)


class TornLineWarning(UserWarning):
    """A line of a .jsonl file was torn by a kill mid-write (named with its file and line)."""


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """Read JSON lines, dropping a torn last line left by a kill mid-write."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """The rows of a .jsonl file (none when it does not exist).

    A torn last line (a kill mid-append) is dropped quietly. A torn line elsewhere (an older llmexplore
    appended after a torn tail, gluing the next row onto the fragment) is reported with a
    ``TornLineWarning`` and the complete row glued after the fragment, if any, is kept."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                return  # torn tail from an interrupted append
            row = _row_after_fragment(line)
            warnings.warn(f"{path}, line {i + 1}: a row torn by an interrupted write; "
                          + ("the complete row after it is kept" if row is not None else "dropped"),
                          TornLineWarning, stacklevel=2)
            if row is not None:
                yield row


def _row_after_fragment(line: str) -> dict | None:
    """The complete JSON object that follows a torn fragment on one line, if there is one."""
    pos = line.find("{", 1)
    while pos > 0:
        try:
            row = json.loads(line[pos:])
        except json.JSONDecodeError:
            pos = line.find("{", pos + 1)
            continue
        return row if isinstance(row, dict) else None
    return None


def rewrite_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> None:
    """Replace a .jsonl file by these rows, atomically (e.g. trimming rows past a resume point)."""
    atomic_write_text(path, "".join(dumps_line(r) for r in rows))


def require_output_dir(path: str | os.PathLike, option: str = "--out") -> Path:
    """Stop early, with one clear error, when ``path`` cannot become a folder to write in.

    Checked before any work starts (a collection or a grid can run for hours before its first
    write): the nearest existing ancestor must be a writable folder and ``path`` itself, when it
    exists, a folder. Nothing is created here.
    """
    from llmexplore.errors import PATH_ECHO_LIMIT, ConfigError, shorten

    path = Path(path)
    shown_path = shorten(str(path), PATH_ECHO_LIMIT)
    hint = f"choose another {option}"
    if path.exists() and not path.is_dir():
        raise ConfigError(f"cannot write to output directory {shown_path}: it is a file, not a folder ({option})",
                          hint=hint)
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise ConfigError(f"cannot write to output directory {shown_path}: {ancestor} is a file, not a folder "
                          f"({option})", hint=hint)
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write to output directory {shown_path}: the folder {ancestor} is not writable "
                          f"({option})", hint=hint)
    return path


def ensure_writable(folder: str | os.PathLike) -> None:
    """Create ``folder`` and prove a file can be written in it, or stop with one clear error before any work
    is done (``require_output_dir`` checks without creating; this is the check right before the writing)."""
    from llmexplore.errors import PATH_ECHO_LIMIT, ConfigError, shorten

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        where = shorten(str(folder), PATH_ECHO_LIMIT)
        raise ConfigError(f"cannot write to output directory {where}: {exc.strerror or exc}",
                          hint="choose another --out, or fix its permissions") from None


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (for errors about files holding the wrong thing)."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (dict, "an object"), (list, "an array"), (str, "a string"),
                       ((int, float), "a number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def file_sha256(path: str | Path) -> str:
    """A file's sha256, read in blocks (checkpoints, model weights and datasets are large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def log_tail(path: str | Path, lines: int) -> str:
    """The last ``lines`` lines of a log ("" when it cannot be read), from its last 20 kB only:
    a failed run's log can be gigabytes, and its end says why it failed."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 20000))
            return b"\n".join(fh.read().splitlines()[-lines:]).decode("utf-8", "replace")
    except OSError:
        return ""
