"""Each stored answer of the completion cache carries a digest, checked when it is read.

An answer edited in the file (by hand, a tool, a damaged disk that SQLite's page checks do not
catch) would otherwise be handed to a run as the model's answer. A row's digest covers its key,
model, text, finish reason and log-probabilities, so an answer moved to another key fails too. A
row that fails is moved to the table ``set_aside`` (kept for a look, never read as an answer) and
its prompt is asked again. Rows written before digests existed (``digest`` NULL) are read as before.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from contextlib import contextmanager
from typing import Iterator, Sequence

#: the table failed rows are moved to: the row as it was, and when it was moved
SET_ASIDE_SCHEMA = """
CREATE TABLE IF NOT EXISTS set_aside (
    id INTEGER, key BLOB, model TEXT, text TEXT, finish TEXT, logprobs TEXT, created REAL, digest BLOB,
    moved REAL NOT NULL
);
"""
_COLUMNS = "id, key, model, text, finish, logprobs, created, digest"
#: keys per statement: SQLite's default limit on bound variables is 32766
_CHUNK = 900


def row_digest(key: bytes, model: str, text: str, finish: str | None, logprobs: str | None) -> bytes:
    """The 16-byte digest of one stored answer: its fields joined by NUL, a missing one as \\x01 (an edit
    cannot make one field into another by accident). Read on every cache hit, so one string, one hash."""
    fields = "\0".join((model, text, "\1" if finish is None else finish, "\1" if logprobs is None else logprobs))
    return hashlib.blake2b(key + fields.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def row_is_sound(key: bytes, model: str, text: str, finish: str | None, logprobs: str | None,
                 digest: bytes | None) -> bool:
    """Whether a row matches its digest (a row written before digests has none and is taken as it is)."""
    return digest is None or bytes(digest) == row_digest(key, model, text, finish, logprobs)


def add_digest_column(conn: sqlite3.Connection) -> None:
    """Give a cache file of an older version its ``digest`` column (another process may just have)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
    if "digest" in columns:
        return
    try:
        conn.execute("ALTER TABLE completions ADD COLUMN digest BLOB")
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):
            raise


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back when the block raises (its error is the one raised)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.DatabaseError:
            pass  # the error that got us here is the one to report
        raise


def set_aside(conn: sqlite3.Connection, keys: Sequence[bytes]) -> None:
    """Move the rows of ``keys`` from ``completions`` to ``set_aside``, in one transaction."""
    moved = time.time()
    with immediate_transaction(conn):
        for start in range(0, len(keys), _CHUNK):
            part = tuple(keys[start:start + _CHUNK])
            marks = ",".join("?" * len(part))
            conn.execute(f"INSERT INTO set_aside ({_COLUMNS}, moved) SELECT {_COLUMNS}, ? FROM completions "
                         f"WHERE key IN ({marks})", (moved, *part))
            conn.execute(f"DELETE FROM completions WHERE key IN ({marks})", part)
