"""The session operations the façade binds: import, list, show, forget; and a harness's transcripts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import NotFound

if TYPE_CHECKING:
    from ee.results.sessions import SessionImport


def _model(ws: Any) -> tuple[Any, str]:
    """The static embedding model of the workspace (None when there is none usable) and its key."""
    from ee.index.view import open_index

    view = open_index(ws)
    if view.model_folder is None:
        return None, ""
    return view.embedder(), view.model_key  # (evidence has the static arm only)


def import_sessions(ws: Any, paths: list[Path], fmt: str | None) -> dict[str, Any]:
    from ee.sessions.importer import import_sessions as run

    embedder, key = _model(ws)
    return run(ws.root, ws.config, paths, fmt, embedder, key)


def session_candidates(ws: Any, report: SessionImport) -> list[Any]:
    """The candidates of the sessions an import added evidence to (ee.sessions.candidates), but one whose
    memory text the store already holds (as for the docs' candidates: the same text, spacing and a final
    full stop aside), such as a decision said again in a later session after a person accepted it."""
    from ee.curate.state import said_by, store_texts
    from ee.sessions import store
    from ee.sessions.candidates import extract

    sessions = sorted({f["session_id"] for f in report.files if f.get("added")})
    if not sessions:
        return []
    with store.connect(ws.root) as db:
        if db is None:
            return []
        evidence = [e for s in sessions for e in store.of_session(db, s)]
    found = extract(evidence)
    if not found:
        return found
    texts = store_texts(ws.store.snapshot().sorted())
    return [c for c in found if said_by(c, texts) is None]


def list_sessions(ws: Any) -> list[dict[str, Any]]:
    from ee.sessions import store

    with store.connect(ws.root, write=False) as db:
        return store.sessions(db) if db is not None else []


def last_import(ws: Any) -> str | None:
    from ee.sessions import store

    with store.connect(ws.root, write=False) as db:
        return store.last_import(db) if db is not None else None


def show_session(ws: Any, ident: str) -> dict[str, Any]:
    from ee.sessions import store

    with store.connect(ws.root, write=False) as db:
        if db is not None and ident.startswith("ev_"):
            found = store.get_many(db, [ident])
            items = list(found.values())
        else:
            items = store.of_session(db, ident) if db is not None else []
    if not items:
        raise NotFound(f"no session or evidence {ident!r}", "list them with: ee sessions list")
    return {
        "session_id": items[0].session_id,
        "evidence": [
            {"id": e.id, "text": e.text, "provenance": e.provenance(), "flags": _flags(e)} for e in items
        ],
    }


def _flags(e: Any) -> list[str]:
    return [
        name
        for name, on in (("secret_masked", e.secrets), ("quarantined", e.flagged), ("sidechain", e.sidechain))
        if on
    ]


def forget_session(ws: Any, ident: str) -> dict[str, Any]:
    from ee.sessions import index, store

    with store.connect(ws.root) as db:
        removed = store.forget(db, ident) if db is not None else 0
        if removed and db is not None:
            store.bump(db)
    if not removed:
        raise NotFound(f"no session or evidence {ident!r}", "list them with: ee sessions list")
    embedder, key = _model(ws)
    index.build(ws.root, embedder, key)  # its index entries and vectors go with it, now
    return {"forgotten": ident, "evidence": removed}


def harness_transcripts(harness: str, root: Path, home: Path | None = None) -> list[Path]:
    """This workspace's transcripts in a harness's default folder, no link followed: Claude Code's
    ``~/.claude/projects/<cwd with / and . as ->/*.jsonl``; Codex's ``~/.codex/sessions/YYYY/MM/DD/
    rollout-*.jsonl``; either only when the ``cwd`` the transcript itself records is this folder or one
    inside it (Claude Code's folder name is ambiguous: ``/w/a-b``, ``/w/a.b`` and ``/w/a/b`` share one)."""
    home = home or Path(os.path.expanduser("~"))
    if harness == "claude-code":
        found = sorted(claude_code_folder(root, home).glob("*.jsonl"))
    else:
        found = sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    return [path for path in found if in_workspace(transcript_cwd(path, harness), root)]


def claude_code_folder(root: Path, home: Path | None = None) -> Path:
    """Where Claude Code keeps the transcripts of sessions started in ``root``: ``~/.claude/projects/``
    and the folder's path with every character but letters and digits as ``-``."""
    home = home or Path(os.path.expanduser("~"))
    return home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(root.resolve()))


def transcript_cwd(path: Path, harness: str) -> str | None:
    """The working directory a harness's transcript records, or None when it records none or is no
    regular file (a link, a FIFO: not followed, not waited on): Codex's ``session_meta`` ``cwd`` (its
    first line), Claude Code's first line with a ``cwd``, among the first lines (at most 1 MiB)."""
    import json

    from ee.config import NotRegularFile, open_file

    try:
        fd, _info = open_file(path)
        with open(fd, "rb") as file:
            head = file.read(1 << 20)
    except (NotRegularFile, OSError):
        return None
    for raw in head.splitlines()[:50]:
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(record, dict):
            return None
        if harness == "codex":
            payload = record.get("payload")
            cwd = payload.get("cwd") if isinstance(payload, dict) else None
            return cwd if isinstance(cwd, str) else None
        if isinstance(record.get("cwd"), str) and record["cwd"]:
            return str(record["cwd"])
    return None


def in_workspace(cwd: str | None, root: Path) -> bool:
    """Whether ``cwd`` (a transcript's or a hook's claim, resolved) is the workspace at ``root`` or in it."""
    if not cwd or "\0" in cwd or not os.path.isabs(cwd):
        return False
    where = Path(cwd).resolve()
    top = root.resolve()
    return where == top or where.is_relative_to(top)
