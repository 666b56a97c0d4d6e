"""Derived data, content-addressed: one row per git blob id (or content hash, the same thing for
uncommitted text). A memory version's parse, tokens and embedding are computed once and reused by every
later index generation and by asOf queries over old commits.

SQLite (stdlib) in WAL mode: one file, safe with several readers and writers, fast batch look-ups.
``sqlite3`` is imported when a cache is opened: a query over a fresh index never opens it, but reads
``CACHE_VERSION`` from here.
"""

from __future__ import annotations

import contextlib
import marshal
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

CACHE_VERSION = 7  # bump when the parse record or the tokenizer changes


class Derived:
    """What ee derives from one blob: the parse (or its error), the masked body, tokens, and a vector."""

    __slots__ = ("body", "record", "tokens", "vector")

    def __init__(self, record: dict[str, Any], body: str, tokens: list[str], vector: bytes | None) -> None:
        self.record = record  # Memory fields + flags, or {"error": {...}} for an unreadable blob
        self.body = body
        self.tokens = tokens
        self.vector = vector  # float32 bytes of the embedding, or None when not embedded yet


class DerivedCache:
    def __init__(self, path: Path) -> None:
        import sqlite3

        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        with contextlib.suppress(sqlite3.DatabaseError):
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS derived (blob TEXT PRIMARY KEY, version INTEGER, data BLOB)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors"
            " (blob TEXT, model TEXT, vector BLOB, PRIMARY KEY (blob, model))"
        )

    def close(self) -> None:
        self._db.close()

    def get_many(self, blobs: Iterable[str], model_id: str | None) -> dict[str, Derived]:
        wanted = list(dict.fromkeys(blobs))
        out: dict[str, Derived] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT blob, data FROM derived WHERE version = ? AND blob IN ({marks})",  # noqa: S608
                (CACHE_VERSION, *chunk),
            )
            for blob, data in rows:
                record, body, tokens = marshal.loads(data)  # noqa: S302 - our own derived data
                out[blob] = Derived(record, body, tokens, None)
            if model_id:
                rows = self._db.execute(
                    f"SELECT blob, vector FROM vectors WHERE model = ? AND blob IN ({marks})",  # noqa: S608
                    (model_id, *chunk),
                )
                for blob, vector in rows:
                    if blob in out:
                        out[blob].vector = vector
        return out

    def put_many(self, items: dict[str, Derived], model_id: str | None) -> None:
        if not items:
            return
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO derived (blob, version, data) VALUES (?, ?, ?)",
                [
                    (blob, CACHE_VERSION, marshal.dumps((d.record, d.body, d.tokens)))
                    for blob, d in items.items()
                ],
            )
            if model_id:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (blob, model, vector) VALUES (?, ?, ?)",
                    [(blob, model_id, d.vector) for blob, d in items.items() if d.vector is not None],
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def count(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM derived").fetchone()
        return int(row[0])


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
