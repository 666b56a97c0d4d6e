"""``ee import session``: transcripts → evidence, incrementally and idempotently, then the index.

Per file, in one transaction: read the bytes past what the last import took (from the start of its last
exchange, which may have been cut short and is replaced by its fuller reading), turn the new turns into
evidence, store it and where the next import starts. A file that did not change since is skipped (the same
file twice changes nothing); a file that was rewritten rather than grown (its imported bytes changed) is read
again from the start, and the evidence it gave before is kept. Turns ``ee sessions forget`` removed are
never read back from the bytes they came from (the record keeps them, :func:`.store.forget`). A file in
error imports nothing and the others go on: the report lists it, and the command exits with its code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ee.errors import EeError, PolicyError
from ee.sessions import store
from ee.sessions.evidence import exchanges, index_text, pieces
from ee.sessions.read import TranscriptError, read_transcript
from ee.sessions.turns import PATH_MAX, field


def _digest(path: Path, length: int) -> str:
    """sha256 of the first ``length`` bytes of ``path``."""
    from ee.config import open_regular

    digest = hashlib.sha256()
    with open(open_regular(path, os.O_RDONLY), "rb") as file:
        left = length
        while left > 0:
            chunk = file.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def import_file(
    db: Any, path: Path, fmt: str | None, max_bytes: int, now: str, known: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Import one transcript into the open database; its line of the report. Into ``known``, each
    stored piece's tokens and text, which the index then takes as they are (:func:`.index.build`)."""
    from ee.index.tokenize import tokenize

    key = field(str(path), limit=PATH_MAX)  # (no secret or control character of a name is stored)
    prior = store.transcript(db, key)
    start, first_index, state, grown = 0, 0, {}, False
    if prior is not None and fmt is not None and fmt != prior["format"]:
        # (read again as another format, its evidence would be dropped for what that format reads; once
        # forgotten, the format asked for reads the whole file afresh)
        if store.ids_from(db, key, 0):
            raise TranscriptError(
                f"{key}: imported before as {prior['format']}, not {fmt}",
                f"import it without --format, or forget it first (ee sessions forget {prior['session_id']}) "
                f"and import it again with --format {fmt}",
                {"path": key, "format": prior["format"]},
            )
    elif prior is not None:
        size = path.stat().st_size
        same = size >= prior["offset"] and _digest(path, prior["offset"]) == prior["digest"]
        if same and size == prior["size"]:
            return {"path": key, "status": "unchanged", "added": 0, "session_id": prior["session_id"]}
        if same:
            start, first_index, state, grown = prior["last_start"], prior["last_turn"], prior["state"], True
    read = read_transcript(
        path, fmt=fmt, start=start, first_index=first_index, state=state, max_bytes=max_bytes
    )
    if not read.format:  # (not a line whole yet: nothing stored, the next import reads it from the start)
        pending = read.size - read.end
        return {"path": key, "status": "pending", "added": 0, "session_id": None, "pending_bytes": pending}
    # (turns `ee sessions forget` removed stay out: the last exchange, read again, would bring them back)
    groups = exchanges([t for t in read.turns if not store.forgotten_turn(state, t.index)])
    items = [piece for group in groups for piece in pieces(group, key, field(path.name))]
    tokens = [tokenize(index_text(item)) for item in items]
    before = store.ids_from(db, key, first_index) if grown else set()
    if grown:
        store.drop_from(db, key, first_index)
    store.add(db, items, tokens)
    if known is not None:
        known.update((item.id, (t, item.text)) for item, t in zip(items, tokens, strict=True))
    added = len({item.id for item in items} - before)
    last = groups[-1][0] if groups else None
    resume = dict(state)
    if last is not None:
        resume["line"] = last.line
    store.save_transcript(
        db,
        key,
        {
            "file_name": field(path.name),
            "session_id": read.session_id,
            "format": read.format,
            "size": read.size,
            "offset": read.end,
            "digest": _digest(path, read.end),
            "last_start": last.offset if last is not None else read.end,
            "last_turn": last.index if last is not None else first_index,
            "state": resume if last is not None else state,
            "imported": now,
        },
    )
    status = "grown" if grown else ("reread" if prior is not None else "new")
    return {
        "path": key,
        "status": status,
        "format": read.format,
        "session_id": read.session_id,
        "turns": len(read.turns),
        "added": added,
        "evidence": len(items),
        "pending_bytes": read.size - read.end,
    }


def import_sessions(
    root: Path, config: Any, paths: list[Path], fmt: str | None, embedder: Any, model_key: str
) -> dict[str, Any]:
    """Import ``paths`` into the workspace at ``root``; the report (``files``, ``errors``, totals, and
    ``degraded``: a retention withheld from a tracked config)."""
    from ee.sessions import index
    from ee.store.ids import now_text

    if not config.get("sessions.import"):
        raise PolicyError(
            "session import is off in this workspace ([sessions] import = false)",
            "set [sessions] import = true in .ee/config.toml to import transcripts",
        )
    now = now_text()
    max_bytes = int(config.get("sessions.max_file_bytes"))
    files: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    changed = False
    known: dict[str, Any] = {}
    with store.connect(root, create=True) as db:
        assert db is not None
        for path in paths:
            db.execute("SAVEPOINT one_file")
            mine: dict[str, Any] = {}
            try:
                line = import_file(db, path.absolute(), fmt, max_bytes, now, mine)
            except EeError as exc:
                db.execute("ROLLBACK TO one_file")
                db.execute("RELEASE one_file")
                errors.append({"path": str(path), **exc.to_dict()})
                continue
            db.execute("RELEASE one_file")
            known.update(mine)  # (a file in error stored nothing)
            files.append(line)
            changed |= line["status"] != "unchanged"
        pruned, degraded = _prune(db, config)
        if changed or pruned:
            store.bump(db)
    built = index.fresh(root, embedder, model_key, known)
    return {
        "files": files,
        "errors": errors,
        "added": sum(f["added"] for f in files),
        "pruned": pruned,
        "evidence": built.size if built is not None else 0,
        "degraded": degraded,
    }


def _prune(db: Any, config: Any) -> tuple[int, list[dict[str, Any]]]:
    """Delete evidence older than ``[sessions] retention_days`` (0: keep everything); the count, and what
    to say when only a config.toml git tracks sets it (a cloned repository's: nothing is deleted)."""
    from ee.config import withheld_problems

    withheld = withheld_problems(config)
    if withheld:
        return 0, [p.to_dict() for p in withheld]
    days = float(config.get("sessions.retention_days") or 0)
    if days <= 0:
        return 0, []
    from datetime import timedelta

    from ee.store.ids import format_time, utcnow

    return store.older_than(db, format_time(utcnow() - timedelta(days=days))), []
