"""Derived data, content-addressed: one row per git blob id (or content hash, the same thing for
uncommitted text). A memory version's parse, tokens and embedding are computed once and reused by every
later index generation and by asOf queries over old commits.

SQLite (stdlib) in WAL mode: one file, safe with several readers and writers, fast batch look-ups.
``sqlite3`` is imported when a cache is opened: a query over a fresh index never opens it, but reads
``CACHE_VERSION`` from here.

Everything in it can be derived again from the memories, so a damaged file (a disk fault, a killed copy,
a person's ``cp`` over it) is never fatal: SQLite says the file is no database or is malformed, the cache
removes the damaged file, starts empty, and records why in :data:`REBUILT_NOTE` (``ee doctor`` reports
it). ``ee doctor`` also checks the file itself (:func:`check`), and ``--fix`` rebuilds it (:func:`reset`).
What is never opened: a link, a FIFO or another user's file in its place (a storage error naming the
``rm`` repair, :meth:`DerivedCache._check_files`). A row or vector that does not fit (:func:`fits`) counts
as not cached.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ee.config import check_database, write_private
from ee.errors import NotRegularFile, StorageError
from ee.store.files import make_state_folder

CACHE_VERSION = 11  # bump when the parse record or the tokenizer changes
REBUILT_NOTE = "rebuilt.json"  # beside the cache file: when and why it was last found damaged
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB: the file's content is damaged
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED: a writer holds it, nothing is wrong

T = TypeVar("T")


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
        self.path = path
        make_state_folder(path.parent)
        self._db = self._guarded(self._open)

    def _open(self) -> Any:
        import sqlite3

        self._check_files()
        uri = f"{self.path.absolute().as_uri()}?nofollow=1"  # (SQLite's own check, as ee.sessions.store)
        db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            with contextlib.suppress(sqlite3.OperationalError):  # another process holds it: keep its mode
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS derived (blob TEXT PRIMARY KEY, version INTEGER, data BLOB)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors"
                " (blob TEXT, model TEXT, vector BLOB, PRIMARY KEY (blob, model))"
            )
        except BaseException:
            db.close()
            raise
        return db

    def _check_files(self) -> None:
        """The cache file and its WAL and shared-memory files, when there: regular files of this user, no
        link (:func:`ee.config.check_database`)."""
        try:
            check_database(self.path)
        except NotRegularFile as exc:
            raise StorageError(
                f"ee keeps derived data in {self.path.parent}, but {exc.filename}: {exc.strerror}",
                f"remove it (rm {exc.filename}): ee makes it again",
            ) from None

    def _guarded(self, action: Callable[[], T]) -> T:
        """``action``, and once more on a fresh file if SQLite finds this one damaged."""
        import sqlite3

        try:
            return action()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) not in _CORRUPT_CODES:
                raise
            reason = f"{exc.sqlite_errorname}: {exc}"
        if getattr(self, "_db", None) is not None:
            self._db.close()
        reset(self.path, reason)
        self._db = self._open()
        return action()

    def close(self) -> None:
        self._db.close()

    def get_many(
        self, blobs: Iterable[str], model_id: str | None, dim: int | None = None
    ) -> dict[str, Derived]:
        """What the cache holds for ``blobs``, with each one's vector under ``model_id`` when it is one of
        ``dim`` finite numbers. A row that is no parse record or a vector that does not fit (a damaged
        row in a sound page, another program's write) counts as not held: derived again and replaced."""
        wanted = list(dict.fromkeys(blobs))
        return self._guarded(lambda: self._get_many(wanted, model_id, dim))

    def _get_many(self, wanted: list[str], model_id: str | None, dim: int | None) -> dict[str, Derived]:
        out: dict[str, Derived] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT blob, data FROM derived WHERE version = ? AND blob IN ({marks})",  # noqa: S608
                (CACHE_VERSION, *chunk),
            )
            for blob, data in rows:
                derived = _derived(data)
                if derived is not None:
                    out[blob] = derived
            if model_id and dim:
                rows = self._db.execute(
                    f"SELECT blob, vector FROM vectors WHERE model = ? AND blob IN ({marks})",  # noqa: S608
                    (model_id, *chunk),
                )
                for blob, vector in rows:
                    if blob in out and fits(vector, dim):
                        out[blob].vector = vector
        return out

    def put_many(self, items: dict[str, Derived], model_id: str | None) -> None:
        if items:
            self._guarded(lambda: self._put_many(items, model_id))

    def _put_many(self, items: dict[str, Derived], model_id: str | None) -> None:
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

    def get_vectors(self, blobs: Iterable[str], model_id: str) -> dict[str, bytes]:
        """The vectors cached under ``model_id`` for ``blobs`` (those it holds), with no parse record:
        the transformer arm's vectors are filed this way (ee.index.transformer)."""
        wanted = list(dict.fromkeys(blobs))

        def read() -> dict[str, bytes]:
            out: dict[str, bytes] = {}
            for chunk in _chunks(wanted, 500):
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT blob, vector FROM vectors WHERE model = ? AND blob IN ({marks})",  # noqa: S608
                    (model_id, *chunk),
                )
                out.update((blob, vector) for blob, vector in rows if isinstance(vector, bytes))
            return out

        return self._guarded(read)

    def put_vectors(self, vectors: dict[str, bytes], model_id: str) -> None:
        """Cache ``vectors`` (blob → float32 bytes) under ``model_id``."""

        def write() -> None:
            with self._transaction():
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (blob, model, vector) VALUES (?, ?, ?)",
                    [(blob, model_id, vector) for blob, vector in vectors.items()],
                )

        if vectors:
            self._guarded(write)

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
        row = self._guarded(lambda: self._db.execute("SELECT COUNT(*) FROM derived").fetchone())
        return int(row[0])


def _derived(data: Any) -> Derived | None:
    """The parse record, masked body and tokens of a row, or None when the row holds anything else."""
    try:
        record, body, tokens = marshal.loads(data)  # noqa: S302 - our own derived data (shape checked)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(record, dict) or not isinstance(body, str) or not isinstance(tokens, list):
        return None
    return Derived(record, body, tokens, None)


def fits(vector: Any, dim: int) -> bool:
    """Is ``vector`` the float32 bytes of ``dim`` finite numbers? The one test of a cached vector, static
    or transformer: any other is embedded again, never a query's internal error or a NaN score."""
    import numpy as np

    if not isinstance(vector, bytes) or len(vector) != 4 * dim:
        return False
    return bool(np.isfinite(np.frombuffer(vector, dtype=np.float32)).all())


def check(path: Path) -> str | None:
    """Why the cache file at ``path`` is damaged (SQLite's own integrity check), or None when it is sound,
    absent, or busy (a writer holds it). Reads every page: for ``ee doctor``, not for queries. Opened as
    a writer would (a WAL database cannot be read-only without its shared-memory file, which a copy or
    a clean-up may have removed); the check itself writes nothing."""
    import sqlite3

    if path.is_symlink():  # (never opened through it: DerivedCache refuses it, --fix removes it)
        return "is a symbolic link (ee follows none here)"
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?nofollow=1", uri=True, timeout=30)
    except sqlite3.DatabaseError as exc:
        return str(exc)
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) in _BUSY_CODES:
            return None
        return str(exc)
    finally:
        db.close()
    found = [str(row[0]) for row in rows if row[0] != "ok"]
    return "; ".join(found[:3]) or None


def reset(path: Path, reason: str) -> None:
    """Start the cache at ``path`` afresh: its files go (the next update derives what it needs again) and
    :data:`REBUILT_NOTE` records when and why."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        (path.parent / name).unlink(missing_ok=True)
    note = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reason": reason}
    write_private(path.parent / REBUILT_NOTE, (json.dumps(note) + "\n").encode("utf-8"))


def rebuilt_note(path: Path) -> dict[str, str] | None:
    """When and why the cache at ``path`` was last found damaged and started afresh, or None."""
    try:
        note = json.loads((path.parent / REBUILT_NOTE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict):
        return None
    return {"at": str(note.get("at", "")), "reason": str(note.get("reason", ""))}


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
