"""A persistent completion cache: nothing is ever asked of a language model twice.

A key hashes everything that can change an answer, so a stored answer is only ever reused for
the same question asked the same way:

- the backend and endpoint (``name``: a chat template changes what the model reads);
- the model (``model_id``: readable, e.g. ``gemma-3-270m@bfloat16``; the oracle's carries its
  rule version and noise settings);
- the backend's other settings that change answers (``cache_settings``: a system prompt, vLLM
  engine options such as ``dtype``, and which weights: the model id names only a file or folder,
  which other weights may share, so local backends add a hash of the weights' content, the same
  on every machine a cache is copied to; ``hf_weights.weights_fingerprint``), as a digest after
  ``#`` (``cache_namespace``); a backend without any (the oracle: nothing but its model id
  changes its answers) keeps the plain ``name|model_id``, so its caches stay valid;
- the sampling parameters (``SamplingParams.cache_text``) and the prompt.

A key made under other settings simply misses: rows of older key formats stay in the file,
unread, and are asked again once. Each answer carries a digest checked when it is read
(``cache_rows.py``): an edited answer is set aside, named in a warning, and asked again. The file
is SQLite in WAL mode:
many processes may read and write it at once, a killed process never loses a committed
entry, and a torn write never corrupts it. Each ``LMCache`` object holds one connection
(guarded by a lock, so threads may share it) and reopens it after a fork.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from llmexplore.lm.base import Completion, LanguageModel, TokenLogprob
from llmexplore.lm.cache_rows import (SET_ASIDE_SCHEMA, add_digest_column, immediate_transaction, row_digest,
                                      row_is_sound, set_aside)
from llmexplore.lm.config import MEMORY_CACHE, SamplingParams

SCHEMA_VERSION = "1"
log = logging.getLogger(__name__)
#: SQLite's default limit on bound variables is 32766; stay well below it
_CHUNK = 900
#: WAL pages (4 KiB each) written between automatic checkpoints
_CHECKPOINT_PAGES = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    id INTEGER PRIMARY KEY,
    key BLOB NOT NULL UNIQUE,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    finish TEXT,
    logprobs TEXT,
    created REAL NOT NULL,
    digest BLOB
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def cache_namespace(lm: LanguageModel) -> str:
    """``<name>|<model_id>``, plus ``#<digest of cache_settings>`` when the backend has settings that change
    answers: readable where it can be (``llmexplore lm cache`` lists rows by it), exact where it must be."""
    namespace = f"{lm.name}|{lm.model_id}"
    settings = lm.cache_settings()
    if not settings:
        return namespace
    # default=str: an option JSON cannot hold still keys by its text (a needless miss at worst)
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return f"{namespace}#{hashlib.blake2b(text.encode(), digest_size=8).hexdigest()}"


def key_prefix(namespace: str, params_text: str) -> "hashlib._Hash":
    """The hash state of (backend|model, params); ``cache_key`` continues a copy with the prompt."""
    h = hashlib.blake2b(digest_size=16)
    h.update(namespace.encode())
    h.update(b"\0")
    h.update(params_text.encode())
    h.update(b"\0")
    return h


def cache_key(namespace: str, params_text: str, prompt: str, prefix: "hashlib._Hash | None" = None) -> bytes:
    """The cache key of one prompt: a hash of the namespace, the sampling settings and the prompt."""
    h = (prefix or key_prefix(namespace, params_text)).copy()
    h.update(prompt.encode("utf-8", "surrogatepass"))
    return h.digest()


def _while_busy(step: Callable[[], None], deadline: float) -> None:
    """Run ``step``, again while SQLite says the file is locked, until ``deadline`` (``time.monotonic``).

    SQLite's busy timeout does not cover every wait: a connection that has read the file and then needs
    to write it (switching a new file to WAL while another process creates it too, measured: 3 of 200
    pairs of processes opening one new cache) is refused at once, as waiting could deadlock. It has let
    go of the file when the statement fails, so trying again is safe: the other process finishes first.
    """
    pause = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))  # jittered, so two waiting processes do not collide again
        pause = min(pause * 2, 0.2)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the file (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _encode_logprobs(logprobs: Sequence[TokenLogprob] | None) -> str | None:
    return None if logprobs is None else json.dumps([t.to_json() for t in logprobs])


def _decode_row(text: str, finish: str | None, logprobs: str | None) -> Completion:
    lp = None if logprobs is None else tuple(TokenLogprob.from_json(t) for t in json.loads(logprobs))
    return Completion(text, finish, lp)


@dataclass
class CacheCounters:
    """What this process did with the cache (the file itself holds no counters)."""

    lookups: int = 0
    hits: int = 0
    misses: int = 0
    stored: int = 0
    #: stored answers that failed their digest: moved to the table set_aside and asked again
    set_aside: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict, for logs and metrics."""
        return {"lookups": self.lookups, "hits": self.hits, "misses": self.misses, "stored": self.stored,
                "set_aside": self.set_aside}


class LMCache:
    def __init__(self, path: str | os.PathLike = MEMORY_CACHE, *, busy_timeout_s: float = 60.0):
        self.path = str(path)
        self.busy_timeout_s = busy_timeout_s
        self.counters = CacheCounters()
        self._lock = threading.Lock()
        self._pid = -1
        self._conn: sqlite3.Connection | None = None
        self._connect()

    # -- connection ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self.path != MEMORY_CACHE:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                from llmexplore.errors import ConfigError

                raise ConfigError(f"cannot create the LM cache {self.path}: {exc.strerror or exc} "
                                  f"({exc.filename})",
                                  hint="point the cache setting (--cache) at a file in a writable "
                                       "folder") from None
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
            _while_busy(lambda: self._set_up(conn), time.monotonic() + self.busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            raise self._unusable(exc, "cannot be opened") from None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """WAL mode, the tables and the schema row: each a no-op on a cache another process set up."""
        if self.path != MEMORY_CACHE:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: process crashes lose nothing
            # each checkpoint syncs the file: one per ~40 MB of answers instead of per ~4 MB (the default)
            # took a third off the cost of storing an answer; readers are unaffected at this size
            conn.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
        conn.executescript(_SCHEMA + SET_ASIDE_SCHEMA)
        add_digest_column(conn)  # a file of an older version
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    def _unusable(self, exc: sqlite3.DatabaseError, what: str) -> Exception:
        """The clear error for a cache file SQLite refuses: corrupt files are offered to be moved aside."""
        from llmexplore.errors import DataError

        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return DataError(f"LM cache {self.path} {what}: {exc}",
                             hint="another process holds it; wait, or point the cache setting at another "
                                  "file")
        aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
        return DataError(f"LM cache {self.path} {what}: {exc} (the file is damaged)",
                         hint=f"move it aside (mv {self.path} {aside}; also its -wal and -shm files) "
                              "and rerun: answers it held are asked of the model again; or point the cache "
                              "setting at another file")

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; SQLite errors become one clear DataError."""
        with self._lock:
            try:
                yield self._connect()
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc, "cannot be read or written") from None

    def close(self) -> None:
        """Close this process's database connection (a forked child opens its own)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- lookups and stores ----------------------------------------------------------------
    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, Completion]:
        """The stored completions of these keys; keys not stored are left out."""
        found: dict[bytes, Completion] = {}
        unique = list(dict.fromkeys(keys))
        with self._database() as conn:
            bad: list[bytes] = []
            for start in range(0, len(unique), _CHUNK):
                part = unique[start:start + _CHUNK]
                marks = ",".join("?" * len(part))
                for key, model, text, finish, lp, digest in conn.execute(
                        f"SELECT key, model, text, finish, logprobs, digest FROM completions WHERE key IN ({marks})",
                        part):
                    if row_is_sound(key, model, text, finish, lp, digest):
                        found[key] = _decode_row(text, finish, lp)
                    else:
                        bad.append(key)
            self._set_aside(conn, bad)
            self.counters.lookups += len(keys)
            hits = sum(1 for k in keys if k in found)
            self.counters.hits += hits
            self.counters.misses += len(keys) - hits
        return found

    def get(self, key: bytes) -> Completion | None:
        """The stored completion of one key, or None (also for one that failed its digest: set aside)."""
        return self.get_many([key]).get(key)

    def _set_aside(self, conn: sqlite3.Connection, keys: list[bytes]) -> None:
        """Move answers that failed their digest out of the way, and say so naming the file."""
        if not keys:
            return
        set_aside(conn, keys)
        self.counters.set_aside += len(keys)
        log.warning("LM cache %s: %d stored answer(s) differ from their digest (edited or damaged); moved to its "
                    "table set_aside and asked of the model again", self.path, len(keys))

    def put_many(self, model: str, items: Iterable[tuple[bytes, Completion]]) -> None:
        """Store (key, completion) pairs of a model; a key stored before is kept as it was."""
        now = time.time()
        rows = []
        for key, c in items:
            logprobs = _encode_logprobs(c.logprobs)
            rows.append((key, model, c.text, c.finish_reason, logprobs, now,
                         row_digest(key, model, c.text, c.finish_reason, logprobs)))
        if not rows:
            return
        with self._database() as conn:
            with immediate_transaction(conn):
                # rows append in id order; only the small key index takes random inserts (3x faster
                # than keying the table itself by the hash)
                conn.executemany("INSERT OR IGNORE INTO completions (key, model, text, finish, logprobs, created, "
                                 "digest) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self.counters.stored += len(rows)

    # -- reporting -------------------------------------------------------------------------
    def entries(self, model: str | None = None) -> int:
        """Number of stored completions, of one model or of all."""
        with self._database() as conn:
            if model is None:
                return int(conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])
            return int(conn.execute("SELECT COUNT(*) FROM completions WHERE model = ?", (model,)).fetchone()[0])

    def models(self) -> dict[str, int]:
        """Stored completions per model."""
        with self._database() as conn:
            rows = conn.execute("SELECT model, COUNT(*) FROM completions GROUP BY model").fetchall()
        return {m: int(n) for m, n in rows}

    def stats(self) -> dict[str, object]:
        """The cache's path, counters and size."""
        return {"path": self.path, **self.counters.as_dict(), "entries": self.entries()}


class CachedLM(LanguageModel):
    """Any backend behind the cache. Only prompts never answered before reach the backend."""

    def __init__(self, backend: LanguageModel, cache: LMCache):
        self.backend = backend
        self.cache = cache
        self.name = backend.name
        self.supports_logprobs = backend.supports_logprobs
        self.supports_scoring = backend.supports_scoring
        self.supports_prompt_logprobs = backend.supports_prompt_logprobs
        #: how closed-answer questions are asked through this model: "generate" or "score" (``questions.ask``)
        self.answer = "generate"
        #: answer=score: subtract the options' scores for a content-free item (``questions.ask``)
        self.calibrate = True
        self.namespace = cache_namespace(backend)
        self.backend_calls = 0
        self.backend_prompts = 0

    @property
    def model_id(self) -> str:
        """The wrapped backend's model id."""
        return self.backend.model_id

    def cache_settings(self) -> dict[str, Any]:
        """The wrapped backend's settings that change answers."""
        return self.backend.cache_settings()

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """Completions of the prompts: from the cache where stored, else from the backend (then stored)."""
        ptext = params.cache_text()
        prefix = key_prefix(self.namespace, ptext)
        keys = [cache_key(self.namespace, ptext, p, prefix) for p in prompts]
        found = self.cache.get_many(keys)
        todo: dict[bytes, str] = {}
        for key, prompt in zip(keys, prompts):
            if key not in found and key not in todo:
                todo[key] = prompt
        if todo:
            try:
                answers = self.backend.generate(list(todo.values()), params)
            except Exception as exc:
                # a backend may attach the answers it did get (``exc.partial``: index -> Completion)
                partial = getattr(exc, "partial", None)
                if partial:
                    todo_keys = list(todo)
                    self.cache.put_many(self.namespace, [(todo_keys[i], c) for i, c in partial.items()])
                    self.backend_prompts += len(partial)
                raise
            if len(answers) != len(todo):
                raise RuntimeError(f"{self.name} returned {len(answers)} completions for {len(todo)} prompts")
            fresh = dict(zip(todo.keys(), answers))
            self.cache.put_many(self.namespace, fresh.items())  # stored before anyone uses them
            self.backend_calls += 1
            self.backend_prompts += len(todo)
            found.update(fresh)
        return [found[k] for k in keys]

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """Option log-probabilities, cached like completions (the text holds them as JSON)."""
        ptext = "score\0" + json.dumps([lead, list(options)])
        prefix = key_prefix(self.namespace, ptext)
        keys = [cache_key(self.namespace, ptext, p, prefix) for p in prompts]
        found = {k: json.loads(c.text) for k, c in self.cache.get_many(keys).items()}
        todo: dict[bytes, str] = {}
        for key, prompt in zip(keys, prompts):
            if key not in found and key not in todo:
                todo[key] = prompt
        if todo:
            scores = self.backend.score(list(todo.values()), lead, options)
            if len(scores) != len(todo):
                raise RuntimeError(f"{self.name} returned {len(scores)} scores for {len(todo)} prompts")
            fresh = dict(zip(todo.keys(), scores))
            self.cache.put_many(self.namespace, [(k, Completion(json.dumps(v), "score")) for k, v in fresh.items()])
            self.backend_calls += 1
            self.backend_prompts += len(todo)
            found.update(fresh)
        return [list(found[k]) for k in keys]

    def prompt_logprobs(self, prompts: Sequence[str],
                        starts: Sequence[int] | None = None) -> list[list[tuple[str, int, float | None]]]:
        """Not cached: a server computes them for each echo request."""
        self.backend_calls += 1
        self.backend_prompts += len(prompts)
        return self.backend.prompt_logprobs(prompts, starts)

    def stats(self) -> dict[str, object]:
        """The cache's figures plus how often and with how many prompts the backend was called."""
        return {**self.cache.stats(), "backend_calls": self.backend_calls, "backend_prompts": self.backend_prompts}

    def close(self) -> None:
        """Close the backend and the cache."""
        self.backend.close()
        self.cache.close()


def counters_delta(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    """What each integer counter grew by between two ``stats()`` snapshots."""
    return {k: int(after[k]) - int(before.get(k, 0)) for k in after if isinstance(after[k], int)}
