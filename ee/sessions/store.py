"""The evidence store: ``.ee/sessions/evidence.sqlite3``, primary local data (never derived, never pushed).

One SQLite database (stdlib ``sqlite3``: transactions, idempotent upserts) with three tables:

* ``transcripts``: per imported file, where the next import starts (``offset``), a hash of the bytes read
  so far (a file rewritten rather than grown is read again from the start, and what it already gave is
  kept), where its last exchange began (re-read and replaced when the file grew, since it may have been
  cut short), and the reader's state (session id, cwd, branch, format), with the turns ``ee sessions
  forget`` removed (``forgotten``: never read back from the same bytes);
* ``evidence``: one row per piece (:class:`ee.sessions.evidence.Evidence`) with its index tokens;
* ``meta``: the generation, bumped by every change, which the derived index (:mod:`ee.sessions.index`)
  compares with its own.

Opened with SQLite's ``nofollow``: a symbolic link in place of the database is refused, as is a link in
place of ``.ee/`` or ``.ee/sessions/`` (a cloned repository must not send ee's writes elsewhere).
"""

from __future__ import annotations

import json
import marshal
import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ee.errors import StorageError
from ee.sessions.evidence import Evidence

FOLDER = ".ee/sessions"
DATABASE = "evidence.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transcripts (
    path TEXT PRIMARY KEY, file_name TEXT NOT NULL, session_id TEXT NOT NULL, format TEXT NOT NULL,
    size INTEGER NOT NULL, offset INTEGER NOT NULL, digest TEXT NOT NULL, last_start INTEGER NOT NULL,
    last_turn INTEGER NOT NULL, state TEXT NOT NULL, imported TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evidence (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, transcript TEXT NOT NULL, file_name TEXT NOT NULL,
    turn INTEGER NOT NULL, last_turn INTEGER NOT NULL, line INTEGER NOT NULL, time TEXT NOT NULL,
    cwd TEXT NOT NULL, branch TEXT NOT NULL, sidechain INTEGER NOT NULL, text TEXT NOT NULL,
    secrets TEXT NOT NULL, flagged INTEGER NOT NULL, commands TEXT NOT NULL, files TEXT NOT NULL,
    tokens BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_session ON evidence (session_id);
CREATE INDEX IF NOT EXISTS evidence_transcript ON evidence (transcript, turn);
"""
_COLUMNS = (
    "id, session_id, transcript, file_name, turn, last_turn, line, time, cwd, branch, sidechain, text, "
    "secrets, flagged, commands, files"
)


def folder_of(root: Path) -> Path:
    return root / FOLDER


def _check_folder(root: Path, create: bool) -> bool:
    """Whether ``.ee/sessions/`` is there (made when ``create``), every folder on the way a real folder of
    this user (:func:`ee.config.state_folder`): a link or a file there is refused."""
    from ee.config import NotRegularFile, state_folder

    folder = folder_of(root)
    if not create and not os.path.lexists(folder):
        return False
    try:
        state_folder(folder)
    except (NotRegularFile, NotADirectoryError, FileExistsError) as exc:
        raise StorageError(
            f"{folder}: {getattr(exc, 'strerror', None) or exc}",
            f"remove {folder}: ee keeps its private session evidence in a folder of its own",
        ) from None
    return True


@contextmanager
def connect(root: Path, *, create: bool = False, write: bool = True) -> Iterator[sqlite3.Connection | None]:
    """The evidence database of the workspace at ``root`` (None when there is none and ``create`` is
    False); each ``with`` block is one transaction, committed when it ends without an error. ``write``
    False: a read-only snapshot (a query never waits for an import, nor blocks one)."""
    if not _check_folder(root, create):
        yield None
        return
    path = folder_of(root) / DATABASE
    if not create and not path.exists():
        yield None
        return
    mode = "" if write else "&mode=ro"
    from ee.config import NotRegularFile, check_database

    try:
        check_database(path)
    except NotRegularFile as exc:
        raise StorageError(
            f"{path}: {exc.filename}: {exc.strerror}",
            f"remove it (rm {exc.filename}): a link or another user's file is never opened",
        ) from None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?nofollow=1{mode}", uri=True, timeout=30, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageError(
            f"{path}: cannot be opened ({exc})", f"check {path} is ee's own database"
        ) from None
    try:
        if write:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        yield db
        db.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise StorageError(
            f"{path}: {exc}", "the evidence database is damaged: move it aside and import again"
        ) from None
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        db.close()


def present(root: Path) -> bool:
    """Whether the workspace at ``root`` has imported sessions at all (a name in ``.ee/``, not followed: a
    link there still goes through :func:`connect`, which refuses it). A query in a workspace without any
    pays nothing for evidence: no model, no index, no database."""
    return os.path.lexists(folder_of(root) / DATABASE) or os.path.islink(folder_of(root))


def generation(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def bump(db: sqlite3.Connection) -> int:
    value = generation(db) + 1
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(value),))
    return value


def transcript(db: sqlite3.Connection, path: str) -> dict[str, Any] | None:
    row = db.execute(
        "SELECT size, offset, digest, last_start, last_turn, state, format, session_id FROM transcripts "
        "WHERE path = ?",
        (path,),
    ).fetchone()
    if row is None:
        return None
    keys = ("size", "offset", "digest", "last_start", "last_turn", "state", "format", "session_id")
    out = dict(zip(keys, row, strict=True))
    out["state"] = json.loads(out["state"])
    return out


def save_transcript(db: sqlite3.Connection, path: str, values: dict[str, Any]) -> None:
    db.execute(
        "INSERT OR REPLACE INTO transcripts (path, file_name, session_id, format, size, offset, digest, "
        "last_start, last_turn, state, imported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            path,
            values["file_name"],
            values["session_id"],
            values["format"],
            values["size"],
            values["offset"],
            values["digest"],
            values["last_start"],
            values["last_turn"],
            json.dumps(values["state"]),
            values["imported"],
        ),
    )


def ids_from(db: sqlite3.Connection, path: str, turn: int) -> set[str]:
    rows = db.execute("SELECT id FROM evidence WHERE transcript = ? AND turn >= ?", (path, turn))
    return {r[0] for r in rows}


def drop_from(db: sqlite3.Connection, path: str, turn: int) -> int:
    """Delete the evidence of ``path`` from turn ``turn`` on (its last exchange, read again); the count."""
    return db.execute("DELETE FROM evidence WHERE transcript = ? AND turn >= ?", (path, turn)).rowcount


def add(db: sqlite3.Connection, items: Iterable[Evidence], tokens: Iterable[list[str]]) -> int:
    """Insert each piece unless its id is there already; how many were new."""
    before = db.total_changes
    db.executemany(
        f"INSERT OR IGNORE INTO evidence ({_COLUMNS}, tokens) VALUES ({', '.join('?' * 17)})",  # noqa: S608
        (
            (
                e.id,
                e.session_id,
                e.transcript,
                e.file_name,
                e.turn,
                e.last_turn,
                e.line,
                e.time,
                e.cwd,
                e.branch,
                int(e.sidechain),
                e.text,
                json.dumps(list(e.secrets)),
                int(e.flagged),
                json.dumps([list(c) for c in e.commands]),
                json.dumps(list(e.files)),
                pack_tokens(t),
            )
            for e, t in zip(items, tokens, strict=True)
        ),
    )
    return db.total_changes - before


def _row(row: tuple[Any, ...]) -> Evidence:
    return Evidence(
        id=row[0],
        session_id=row[1],
        transcript=row[2],
        file_name=row[3],
        turn=row[4],
        last_turn=row[5],
        line=row[6],
        time=row[7],
        cwd=row[8],
        branch=row[9],
        sidechain=bool(row[10]),
        text=row[11],
        secrets=tuple(json.loads(row[12])),
        flagged=bool(row[13]),
        commands=tuple((c[0], c[1]) for c in json.loads(row[14])),
        files=tuple(json.loads(row[15])),
    )


def get_many(db: sqlite3.Connection, ids: list[str]) -> dict[str, Evidence]:
    out: dict[str, Evidence] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for row in db.execute(f"SELECT {_COLUMNS} FROM evidence WHERE id IN ({marks})", chunk):  # noqa: S608
            out[row[0]] = _row(row)
    return out


def session_of(db: sqlite3.Connection, ids: list[str]) -> dict[str, str]:
    """Each piece's session id (the ranking's session aggregation reads only this column)."""
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        out.update(db.execute(f"SELECT id, session_id FROM evidence WHERE id IN ({marks})", chunk))  # noqa: S608
    return out


def of_session(db: sqlite3.Connection, session_id: str) -> list[Evidence]:
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM evidence WHERE session_id = ? ORDER BY time, transcript, turn",  # noqa: S608
        (session_id,),
    )
    return [_row(r) for r in rows]


def pack_tokens(tokens: list[str]) -> bytes:
    """A piece's index tokens as stored: marshalled, then zlib-compressed (a quarter of the bytes: the
    tokens repeat the text's words, and the database is the part of .ee/sessions/ that grows)."""
    return zlib.compress(marshal.dumps(tokens), 1)


def unpack_tokens(blob: bytes) -> list[str]:
    """The tokens :func:`pack_tokens` stored (or, from a database written before they were compressed,
    marshalled alone)."""
    try:
        data = zlib.decompress(blob)
    except zlib.error:
        data = blob
    tokens: list[str] = marshal.loads(data)  # noqa: S302 - ee's own data
    return tokens


def ids_times(db: sqlite3.Connection) -> Iterator[tuple[str, str]]:
    """(id, time) of every piece, in id order."""
    yield from db.execute("SELECT id, time FROM evidence ORDER BY id")


def tokens(db: sqlite3.Connection, ids: list[str]) -> list[list[str]]:
    """The stored index tokens of each of ``ids``, in their order."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for evidence_id, blob in db.execute(
            f"SELECT id, tokens FROM evidence WHERE id IN ({marks})",  # noqa: S608
            chunk,
        ):
            found[evidence_id] = unpack_tokens(blob)
    return [found[i] for i in ids]


def texts(db: sqlite3.Connection, ids: list[str]) -> list[str]:
    found = get_many(db, ids)
    return [found[i].text for i in ids]


def sessions(db: sqlite3.Connection) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT session_id, COUNT(*), MIN(time), MAX(time), GROUP_CONCAT(DISTINCT transcript), "
        "MAX(cwd), MAX(branch) FROM evidence GROUP BY session_id ORDER BY MIN(time), session_id"
    )
    return [
        {
            "session_id": r[0],
            "evidence": r[1],
            "first": r[2],
            "last": r[3],
            "transcripts": sorted(set((r[4] or "").split(","))),
            "cwd": r[5],
            "branch": r[6],
        }
        for r in rows
    ]


def last_import(db: sqlite3.Connection) -> str | None:
    """When an import last added or re-read a transcript (RFC 3339), or None before the first."""
    row = db.execute("SELECT MAX(imported) FROM transcripts").fetchone()
    return str(row[0]) if row and row[0] else None


def forget(db: sqlite3.Connection, ident: str) -> int:
    """Delete a session's evidence (or one piece, by its id); the count. Each transcript it came from
    remembers the turns forgotten (``forgotten`` in its record's state): no later import of the same bytes
    brings them back, while turns written after them are imported as usual (:func:`forgotten_turn`)."""
    where = "id = ?" if ident.startswith("ev_") else "session_id = ?"
    spans: dict[str, list[list[int]]] = {}
    for path, first, last in db.execute(
        f"SELECT transcript, turn, last_turn FROM evidence WHERE {where}",  # noqa: S608
        (ident,),
    ):
        spans.setdefault(path, []).append([first, last])
    for path, new in spans.items():
        row = db.execute("SELECT state FROM transcripts WHERE path = ?", (path,)).fetchone()
        if row is None:
            continue
        state = json.loads(row[0])
        state["forgotten"] = _merged_spans(state.get("forgotten", []) + new)
        db.execute("UPDATE transcripts SET state = ? WHERE path = ?", (json.dumps(state), path))
    return db.execute(f"DELETE FROM evidence WHERE {where}", (ident,)).rowcount  # noqa: S608


def _merged_spans(spans: list[list[int]]) -> list[list[int]]:
    """Turn ranges (first, last, both included), sorted, those that touch or overlap made one."""
    out: list[list[int]] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def forgotten_turn(state: dict[str, Any], index: int) -> bool:
    """Whether turn ``index`` of a transcript whose record's state is ``state`` was forgotten."""
    return any(first <= index <= last for first, last in state.get("forgotten", ()))


def older_than(db: sqlite3.Connection, cutoff: str) -> int:
    """Delete the evidence whose time is before ``cutoff`` (the retention setting); the count."""
    return db.execute("DELETE FROM evidence WHERE time < ?", (cutoff,)).rowcount
