"""asOf: answer a query over the memory files as they were in a past commit.

The spec is an RFC 3339 time (→ the last commit at or before it on the current history, first-parent)
or a commit-ish (``HEAD~20``, a tag, a sha). The files of that commit are read from git (memories deleted
since included, memories created since excluded); parses and embeddings are reused from the
content-addressed cache by blob id, and the built view is saved under ``.ee/index/asof/<commit>`` so a
second query at the same commit loads it like the HEAD index.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import NotFound, UsageError
from ee.git.repo import is_commitish
from ee.index.freshness import INDEX_DIR
from ee.index.segment import Entry, Generation
from ee.index.view import IndexView, model_folder, problem_notes
from ee.model import CommitInfo
from ee.store.files import EVENTS, MEMORIES
from ee.store.ids import TimeOutOfRange, parse_time

if TYPE_CHECKING:
    from ee.model import Memory
    from ee.workspace import Workspace

ASOF_DIR = f"{INDEX_DIR}/asof"
AS_OF_EXAMPLES = "2026-12-01T09:00:00Z, or a date: 2026-12-01"
KEEP_VIEWS = 8
LAYOUT = 2  # 2: duplicate ids kept and reported as the HEAD index does (a view saved before is built again)


def resolve(ws: Workspace, spec: str) -> tuple[str | None, datetime]:
    """(commit or None when the time is before the first commit, reference time)."""
    spec = spec.strip()
    if not spec:
        raise UsageError(
            "asOf is empty", f"pass an RFC 3339 time ({AS_OF_EXAMPLES}) or a commit-ish such as HEAD~3"
        )
    as_time: datetime | None = None
    if spec[:4].isdigit() and "-" in spec:
        try:
            as_time = parse_time(spec)
        except TimeOutOfRange:
            raise UsageError(
                f"asOf {spec!r} {TimeOutOfRange.reason}", "pass a time such as 2026-12-01T09:00:00Z"
            ) from None
        except ValueError:
            as_time = None
    if as_time is not None and as_time.timestamp() < 0:
        return None, as_time  # git keeps no commit dated before 1970 (and reads `--before=-…` as now)
    if as_time is not None:
        # One git process for the usual case; the checks below (empty repository) only when it finds none.
        found = ws.git.run(
            "rev-list",
            "-1",
            "--first-parent",
            f"--before={int(as_time.timestamp())}",
            "HEAD",
            "--",
            check=False,
        ).strip()
        return (found or ws.git.commit_at_or_before(int(as_time.timestamp()))), as_time
    if is_commitish(spec):  # the commit and its date in one git process
        out = ws.git.run("show", "-s", "--format=%H%x00%cI", f"{spec}^{{commit}}", "--", check=False).split()
        commit, _, date = out[0].partition("\x00") if len(out) == 1 else ("", "", "")  # (a range: several)
        if len(commit) >= 40 and date:
            return commit, parse_time(date)
    if ws.git.head() is None:
        raise NotFound(f"no commit {spec!r}: the repository has no commits", "commit memories first")
    try:
        commit = ws.git.resolve(spec)
    except NotFound as exc:  # "last tuesday": say what asOf takes
        raise NotFound(
            f"asOf {spec!r} is neither a time nor a commit of this repository",
            f"pass an RFC 3339 time ({AS_OF_EXAMPLES}) or a commit-ish (HEAD~3, a tag, a commit id: "
            "git log --oneline)",
            exc.details,
        ) from None
    date = ws.git.run("show", "-s", "--format=%cI", commit).strip()
    return commit, parse_time(date)


def commit_info(ws: Workspace, commit: str) -> CommitInfo:
    out = ws.git.run("show", "-s", "--format=%H%x00%cI%x00%an%x00%s", commit)
    sha, date, author, subject = out.rstrip("\n").split("\x00")
    return CommitInfo(sha, date, author, subject)


def open_as_of(ws: Workspace, commit: str | None) -> IndexView:
    """The view of the memories at ``commit`` (an empty view for None)."""
    folder, model_key, model_problem = model_folder(ws)
    degraded = [model_problem] if model_problem else []
    if commit is None:
        degraded.append(
            {
                "code": "as_of_before_history",
                "severity": "warning",
                "message": "asOf is before the first commit: there were no memories yet",
                "repair": "ask for a later time (see `git log --reverse --format=%cI | head -1`)",
            }
        )
        return IndexView(
            Generation().updated([], [], None),
            {},
            {},
            None,
            degraded,
            None,
            commit=None,
            root=ws.root,
            git=ws.git,
        )
    target = _views_folder(ws) / f"{commit}-{_key_hash(model_key)}"
    view = _load(target, folder, degraded, commit, ws, model_key)
    if view is not None:
        return view
    gen, state = _build(ws, commit, folder, degraded, model_key)
    _save(target, gen, state)
    return IndexView(
        gen,
        {},
        state,
        folder if gen.vectors is not None else None,
        degraded + problem_notes(state),
        None,
        commit=commit,
        root=ws.root,
        git=ws.git,
        model_key=model_key,
    )


def _key_hash(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()[:10]


def _load(
    target: Path,
    folder: Path | None,
    degraded: list[dict[str, Any]],
    commit: str,
    ws: Workspace,
    model_key: str = "",
) -> IndexView | None:
    if not (target / "DONE").exists():
        return None
    try:
        gen = Generation.load(target)
        state = marshal.loads((target / "state.marshal").read_bytes())  # noqa: S302 - our own file
        if not isinstance(state, dict) or state.get("layout") != LAYOUT:
            raise ValueError("a view of an older layout")
    except (OSError, ValueError, EOFError, KeyError, TypeError):  # damaged, or an older layout: build again
        shutil.rmtree(target, ignore_errors=True)
        return None
    # The model key lets the view reuse the process's loaded embedder (a warm server, a test session):
    # without it every asOf query loaded the model again (~120 ms).
    return IndexView(
        gen,
        {},
        state,
        folder if gen.vectors is not None else None,
        degraded + problem_notes(state),
        None,
        commit=commit,
        root=ws.root,
        git=ws.git,
        model_key=model_key,
    )


def _build(
    ws: Workspace, commit: str, folder: Path | None, degraded: list[dict[str, Any]], model_key: str = ""
) -> tuple[Generation, dict[str, Any]]:
    import numpy as np

    from ee.index.cache import DerivedCache
    from ee.index.derive import derive, embed_text
    from ee.index.freshness import CACHE_PATH
    from ee.index.generations import drop_duplicate_ids
    from ee.index.provenance import provenance
    from ee.index.view import embedder_or_problem
    from ee.policy.secrets import name_record
    from ee.store.feedback import read_events_text

    files = ws.git.ls_tree(commit, MEMORIES)
    embedder, problem = embedder_or_problem(folder, model_key) if folder else (None, None)
    if problem:
        degraded.append(problem)
    from ee.index.embedder import DOCUMENT_RECIPE

    vector_key = f"{embedder.real_id}/{DOCUMENT_RECIPE}" if embedder else None
    cache = DerivedCache(ws.root / CACHE_PATH)
    try:
        derived = cache.get_many(files.values(), vector_key, embedder.dim if embedder else None)
        missing = sorted({b for b in files.values() if b not in derived})
        contents = ws.git.read_blobs(missing)
        paths = {blob: rel for rel, blob in files.items()}
        fresh = {blob: derive(contents[blob], paths[blob]) for blob in missing if blob in contents}
        derived |= fresh
        need = sorted(b for b, d in derived.items() if d.vector is None and "error" not in d.record)
        if embedder and need:
            matrix = embedder.encode_documents(
                [
                    embed_text(derived[b].body, derived[b].record["tags"], derived[b].record["kind"])
                    for b in need
                ]
            )
            for blob, row in zip(need, matrix, strict=True):
                derived[blob].vector = row.astype("float32").tobytes()
                fresh[blob] = derived[blob]
        cache.put_many(fresh, vector_key)
    finally:
        cache.close()
    entries, problems = [], []
    for rel in sorted(files):
        item = derived.get(files[rel])
        if item is None or "error" in item.record:
            from ee.index.derive import errors_of

            errors = errors_of(item.record) if item else [{"message": "missing blob"}]
            problems += [{"code": "memory_invalid", "severity": "error", "path": rel, **e} for e in errors]
            continue
        record = dict(item.record)
        name_record(record, rel)
        vector = np.frombuffer(item.vector, dtype=np.float32) if item.vector is not None else None
        entries.append(Entry(rel, files[rel], True, record, item.body, item.tokens, vector))
    dim = embedder.dim if embedder and all(e.vector is not None for e in entries) else None
    # Of several files with one id, the one the HEAD index keeps (ee.store.files.keep_order), reported alike.
    gen, duplicates = drop_duplicate_ids(Generation().updated([], entries, dim), dim)
    problems += duplicates
    event_blobs = ws.git.ls_tree(commit, EVENTS, ".jsonl")
    texts = ws.git.read_blobs(event_blobs.values())
    events = {}
    for rel, blob in sorted(event_blobs.items()):
        items, bad = read_events_text(texts.get(blob, b"").decode("utf-8", "replace"), rel)
        if items:
            events[Path(rel).stem] = items
        problems.extend(bad)
    prov = provenance(ws.git, {}, commit)
    state = {
        "layout": LAYOUT,
        "problems": sorted(problems, key=lambda p: (p["path"], p.get("line") or 0)),
        "events": events,
        "provenance": prov["provenance"],
        "head_blobs": prov["head_blobs"],
        "head_commit": commit,
        "agent_ids": prov["agent_ids"],
    }
    return gen, state


def _save(target: Path, gen: Generation, state: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        if target.exists():
            shutil.rmtree(target)
        gen.save(target)
        (target / "state.marshal").write_bytes(marshal.dumps(state))
        _prune(target.parent)


def _views_folder(ws: Workspace) -> Path:
    """``.ee/index/asof``, made when missing; a StorageError when a folder on the way is a link (or not
    this user's): ee saves and prunes views only in a folder of its own."""
    from ee.config import state_folder
    from ee.errors import NotRegularFile, StorageError

    try:
        return state_folder(ws.root / ASOF_DIR)
    except NotRegularFile as exc:
        raise StorageError(
            f"cannot keep as-of views in {ASOF_DIR}/: {exc.filename}: {exc.strerror}",
            f"remove it (rm -r {ws.root / ASOF_DIR}, or the link on the way): ee makes it again",
        ) from None


# What ee names a saved view (``<commit>-<model key hash>``, ``.tmp`` while it is written): pruning
# deletes nothing else, and nothing that is not a folder (a link is no view, whatever its name).
_VIEW_NAME = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?-[0-9a-f]{10}(?:\.tmp)?")


def _prune(folder: Path) -> None:
    views = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if _VIEW_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                views.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    for _mtime, name in sorted(views)[:-KEEP_VIEWS]:
        shutil.rmtree(folder / name, ignore_errors=True)


def memory_as_of(ws: Workspace, memory_id: str, spec: str) -> tuple[Memory, CommitInfo]:
    """One memory as it was at a time or commit (a deleted memory included, when it existed then)."""
    from ee.store import frontmatter
    from ee.store.files import check_id

    check_id(memory_id)
    commit, _ref = resolve(ws, spec)
    if commit is None:
        raise NotFound(f"no memories existed at {spec}", "ask for a later time")
    view = open_as_of(ws, commit)
    pos = view.gen.position(memory_id)
    if pos is None:
        raise NotFound(
            f"memory {memory_id} did not exist at {spec} (commit {commit[:10]})",
            f"see its versions: ee memory history {memory_id}",
        )
    record = view.gen.records[pos]
    data = ws.git.read_blobs([record["blob"]])[record["blob"]]
    memory, _ = frontmatter.parse(frontmatter.decode(data, record["path"]), record["path"])
    return memory, commit_info(ws, commit)
