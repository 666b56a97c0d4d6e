"""The incremental update of the index (:class:`Updater`, under :func:`ee.index.freshness.index_lock`): from
the saved generation to the store's current state, when :func:`ee.index.freshness.is_fresh` says it
differs. It reads the new and changed memory files (never one the store would skip), reuses derived data
by blob id from the derived cache, derives the rest and saves a new generation (:mod:`ee.index.generations`).
"""

from __future__ import annotations

import json
import marshal
import os
import stat
import time
from pathlib import Path
from typing import Any

import numpy as np

from ee._crash import crash_point
from ee.config import write_private
from ee.git.repo import blob_id
from ee.index.cache import CACHE_VERSION
from ee.index.freshness import (
    CACHE_PATH,
    FORMAT,
    STAMPS,
    Progress,
    Scan,
    Stamp,
    Stamps,
    SyncReport,
    body_limit,
    differences,
    parse_stamps,
    racy_files,
    stamps_record,
)
from ee.index.generations import (
    HEAD_STATE,
    drop_duplicate_ids,
    keep_warm,
    load_state,
    prune,
    save_state,
    shared_cache,
    warm,
)
from ee.index.segment import Entry, Generation
from ee.policy.secrets import name_record
from ee.store.files import INDEX_DIR, MAX_BODY_BYTES, MEMORIES, shown_path

_EMBED_CHUNK = 1024  # texts per encode call: progress steps (the result does not depend on it)


def _no_progress(phase: str, done: int, total: int) -> None:
    """The default progress callback: report nothing."""


class Updater:
    """Brings the saved index up to the store's current state (call under :func:`index_lock`)."""

    def __init__(
        self,
        root: Path,
        git: Any,
        embedder: Any,
        model_key: str | None,
        progress: Progress | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.root = root
        self.git = git
        self.embedder = embedder  # None → lexical only
        self.model_key = model_key  # what the manifest compares; set even when the model failed to load
        self.cache = shared_cache(root / CACHE_PATH)
        self.max_bytes = body_limit(root) if max_bytes is None else max_bytes
        self.progress = progress or _no_progress

    @property
    def vector_key(self) -> str | None:
        """Vectors are cached under the model's content id, so a moved model folder keeps them."""
        if self.embedder is None:
            return None
        from ee.index.embedder import DOCUMENT_RECIPE

        return f"{getattr(self.embedder, 'real_id', self.embedder.model_id)}/{DOCUMENT_RECIPE}"

    @property
    def vector_dim(self) -> int | None:
        """The width of the vectors cached under :attr:`vector_key`."""
        return None if self.embedder is None else int(self.embedder.dim)

    def run(
        self,
        manifest: dict[str, Any] | None,
        head: str,
        found: Scan,
        force: bool = False,
        scanned_at: int | None = None,
    ) -> tuple[Generation, dict[str, Any], SyncReport]:
        """Update from ``manifest`` to the state ``found`` / ``head`` (``scanned_at``: the
        ``time.time_ns()`` taken just before ``found`` was stat'ed)."""
        events = found.events
        started = time.perf_counter()
        scanned_at = time.time_ns() if scanned_at is None else scanned_at
        report = SyncReport()
        model_id = self.model_key
        old_gen: Generation | None = None
        old_state: dict[str, Any] = {}
        if manifest and not manifest.get("corrupt") and not force and manifest["cache"] == CACHE_VERSION:
            try:
                folder = self.root / INDEX_DIR / manifest["generation"]
                old_gen, old_state = warm(folder) or (
                    Generation.load(folder, for_update=True),
                    load_state(folder),
                )
            except (OSError, ValueError, EOFError, KeyError, TypeError):
                old_gen, report.reason = None, "the index was damaged and has been rebuilt"
        elif manifest and manifest.get("corrupt"):
            report.reason = "the index manifest was damaged and has been rebuilt"
        present = set(found.paths)
        if old_gen is None or manifest is None or manifest.get("model_id") != model_id:
            report.rebuilt = True
            report.reason = report.reason or (
                "full build" if old_gen is None else "the embedding model changed"
            )
            old_gen, old_blobs, old_racy = Generation(), {}, set()
            moved_stamps, gone, old_present = present, list[str](), set()
        else:
            saved: Stamps = manifest["stamps"]
            old_blobs, old_racy = saved.blobs, set(manifest["racy"])  # ("" for an unreadable file)
            moved_stamps, gone = differences(saved, found)
            old_present = present if not gone and saved.paths == found.key()[0] else set(saved.files)
        changed_set = moved_stamps | (old_racy & present) | set(gone)
        limit_moved = (
            not report.rebuilt and manifest is not None and manifest.get("max_bytes") != self.max_bytes
        )
        if limit_moved:
            # store.max_body_bytes changed: the files it skipped are looked at again, and so are the ones
            # it now skips (over the new limit), whatever their stamps say.
            changed_set |= {rel for rel, blob in old_blobs.items() if not blob} & present
            changed_set |= _larger_than(found, self.max_bytes)
        # A file skipped for a duplicate id is looked at again whenever anything changed: the file that
        # won may be the one that went away.
        dup_paths = (
            ({p["path"] for p in old_state.get("problems", []) if p.get("code") == "duplicate_id"} & present)
            if changed_set
            else set()
        )
        changed = sorted((changed_set & present) | dup_paths)
        datas = {rel: _read(self.root / rel, self.root / MEMORIES, self.max_bytes) for rel in changed}
        blobs = {rel: blob_id(data) for rel, data in datas.items() if data is not None}
        # (An unreadable file is never "unchanged": why it is skipped is looked at again.)
        unchanged_blob = {
            rel
            for rel in changed
            if rel in old_present
            and rel in blobs
            and blobs[rel] == old_blobs.get(rel)
            and rel not in dup_paths
        }
        really = [rel for rel in changed if rel not in unchanged_blob and rel in blobs]
        # A file that became unreadable (grown past the limit, replaced by a FIFO) leaves the index too.
        dropped = [rel for rel in changed if rel in old_present and rel not in blobs]
        removed = gone + [rel for rel in really if rel in old_present] + dropped
        head_info = self._head_info(manifest, head, old_state, report)
        gone_blobs = {old_blobs.get(rel) or None: rel for rel in gone}
        for rel in really:
            if rel in dup_paths and blobs.get(rel) == (old_blobs.get(rel) or None):
                continue  # looked at again, not changed
            if rel in old_present:
                report.modified.append(rel)
            elif blobs[rel] in gone_blobs:
                report.moved.append((gone_blobs.pop(blobs[rel]), rel))
            else:
                report.new.append(rel)
        still_gone = set(gone_blobs.values())  # (what was not matched to a moved file)
        report.deleted = [rel for rel in gone if rel in still_gone]
        recheck = [rel for rel in changed if rel not in unchanged_blob]
        event_map, event_problems = self._events(events, manifest, old_state, report)
        racy = racy_files(found, scanned_at)
        if not (
            recheck
            or removed
            or report.events_changed
            or report.head_changed
            or report.rebuilt
            or limit_moved
        ):
            # Only stamps moved (a touch, a re-checked racy file): same generation, new stamps.
            return self._restamp(old_gen, old_state, manifest or {}, found, old_blobs, racy, report, started)
        entries = self._entries(really, datas, blobs, head_info["head_blobs"])
        positions = {p: i for i, p in enumerate(old_gen.paths)} if removed else {}
        remove = [positions[rel] for rel in removed if rel in positions]
        if any(rel in positions for rel in dropped):
            report.modified = sorted(report.modified + [rel for rel in dropped if rel in positions])
        dim = self.embedder.dim if self.embedder else None
        new_gen = old_gen.updated(remove, entries, dim)
        new_gen, dup_problems = drop_duplicate_ids(new_gen, dim)
        if report.head_changed:  # a commit of a hand edit changes only this flag (kept records keep theirs
            head_blobs = head_info["head_blobs"]  # while HEAD stays: the same path and blob, the same HEAD)
            pairs = zip(new_gen.paths, new_gen.blobs, strict=True)
            flags = np.fromiter((head_blobs.get(p) == b for p, b in pairs), bool, new_gen.size)
            new_gen.with_committed(flags)
        # A file touched but not changed (same blob) keeps its problems: it is not parsed again.
        problems = [
            p for p in old_state.get("problems", []) if p["path"] in present and p["path"] not in recheck
        ]
        problems = [p for p in problems if p.get("code") != "duplicate_id"]
        problems += self._problems(entries, recheck, datas) + dup_problems
        state = {
            "problems": sorted(problems + event_problems, key=lambda p: (p["path"], p.get("line") or 0)),
            "events": event_map,
            "provenance": head_info["provenance"],
            "head_blobs": head_info["head_blobs"],
            "head_commit": head_info["head_commit"],
            "agent_memories": head_info["agent_memories"],
            "agent_ids": head_info["agent_ids"],
        }
        new_blobs = {rel: b for rel, b in old_blobs.items() if rel in present} if gone else dict(old_blobs)
        new_blobs.update(blobs)
        for rel in dropped:
            new_blobs.pop(rel)  # read no more: looked at again when the limit moves
        # The HEAD part of the state (provenance of every file) is shared with the previous generation
        # while HEAD does not move: linked, not written again.
        same_head = manifest is not None and not report.head_changed and not report.rebuilt
        old_head = (
            self.root / INDEX_DIR / manifest["generation"] / HEAD_STATE if manifest and same_head else None
        )
        new_manifest = self._save(new_gen, state, head, found, new_blobs, racy, model_id, old_head)
        keep_warm(self.root / INDEX_DIR / new_manifest["generation"], (new_gen, state, True))
        new_manifest["semantic"] = new_gen.vectors is not None
        report.seconds = time.perf_counter() - started
        return new_gen, new_manifest | {"state": state}, report

    def _restamp(
        self,
        gen: Generation,
        state: dict[str, Any],
        manifest: dict[str, Any],
        found: Scan,
        old_blobs: dict[str, str],
        racy: list[str],
        report: SyncReport,
        started: float,
    ) -> tuple[Generation, dict[str, Any], SyncReport]:
        """Record new stamps for the current generation (atomically replaced: a reader sees the old or
        the new table, and either is correct for it)."""
        folder = self.root / INDEX_DIR / manifest["generation"]
        record = stamps_record(found, old_blobs, racy)
        tmp = folder / f"{STAMPS}.{os.getpid()}.tmp"
        write_private(tmp, marshal.dumps(record))
        os.replace(tmp, folder / STAMPS)
        report.seconds = time.perf_counter() - started
        stamps = parse_stamps(record)
        return gen, {k: v for k, v in manifest.items() if k not in stamps} | stamps | {"state": state}, report

    # ---------------------------------------------------------------------------- pieces

    def _entries(
        self,
        rels: list[str],
        datas: dict[str, bytes | None],
        blobs: dict[str, str],
        head_blobs: dict[str, str],
    ) -> list[Entry]:
        model_id = self.vector_key
        cached = self.cache.get_many((blobs[rel] for rel in rels), model_id, self.vector_dim)
        fresh: dict[str, Any] = {}
        todo: dict[str, str] = {}  # blob → the first path holding it
        for rel in rels:
            if blobs[rel] not in cached:
                todo.setdefault(blobs[rel], rel)
        batch = {blob: (datas[rel] or b"", rel) for blob, rel in todo.items()}
        from ee.index.derive import derive_all  # (here: a query over a fresh index never derives)

        fresh.update(derive_all(batch, self.progress))
        derived = cached | fresh
        need_vectors = {b: d for b, d in derived.items() if d.vector is None and "error" not in d.record}
        if self.embedder and need_vectors:
            self._embed(need_vectors, fresh)
        self.cache.put_many(fresh, model_id)
        import numpy as np

        entries = []
        for rel in rels:
            item = derived[blobs[rel]]
            if "error" in item.record:
                continue
            record = dict(item.record)
            name_record(record, rel)
            vector = np.frombuffer(item.vector, dtype=np.float32) if item.vector is not None else None
            entries.append(
                Entry(
                    rel, blobs[rel], head_blobs.get(rel) == blobs[rel], record, item.body, item.tokens, vector
                )
            )
        return entries

    def _embed(self, need: dict[str, Any], fresh: dict[str, Any]) -> None:
        from ee.index.derive import embed_text

        order = sorted(need)
        for start in range(0, len(order), _EMBED_CHUNK):
            chunk = order[start : start + _EMBED_CHUNK]
            texts = [embed_text(need[b].body, need[b].record["tags"], need[b].record["kind"]) for b in chunk]
            matrix = self.embedder.encode_documents(texts)
            for blob, row in zip(chunk, matrix, strict=True):
                need[blob].vector = row.astype("float32").tobytes()
                fresh[blob] = need[blob]
            self.progress("embed", start + len(chunk), len(order))

    def _problems(
        self, entries: list[Entry], changed: list[str], datas: dict[str, bytes | None]
    ) -> list[dict[str, Any]]:
        """Errors of unreadable files, warnings of readable ones, and duplicate ids."""
        from ee.index.derive import errors_of

        out: list[dict[str, Any]] = []
        ok = {e.path for e in entries}
        model_id = self.vector_key
        for rel in changed:
            data = datas.get(rel)
            if data is None:
                reason = _skip_reason(self.root / rel, self.root / MEMORIES, self.max_bytes)
                if reason:  # (a file that vanished meanwhile has none: the next update drops it)
                    shown = shown_path(rel)
                    out.append(
                        {
                            "code": "memory_invalid",
                            "severity": "error",
                            "path": shown,
                            "line": None,
                            "message": reason,
                            "repair": f"move {shown} out of memories/ (see ee doctor)",
                        }
                    )
                continue
            if rel not in ok:
                derived = self.cache.get_many([blob_id(data)], model_id, self.vector_dim).get(blob_id(data))
                errors = errors_of(derived.record) if derived else [{"message": "unreadable", "line": None}]
                out += [{"code": "memory_invalid", "severity": "error", "path": rel, **e} for e in errors]
        for entry in entries:
            for warning in entry.record.get("warnings", []):
                out.append({**warning, "path": entry.path})
            if entry.record.get("secrets"):
                out.append(
                    {
                        "code": "secret_in_file",
                        "severity": "error",
                        "path": entry.path,
                        "message": f"holds secret(s): {', '.join(entry.record['secrets'])}"
                        " (masked in output)",
                        "repair": f"remove the secret from {entry.path} and commit",
                    }
                )
        return out

    def _head_info(
        self, manifest: dict[str, Any] | None, head: str, old_state: dict[str, Any], report: SyncReport
    ) -> dict[str, Any]:
        if manifest and manifest.get("head") == head and "head_blobs" in old_state:
            return old_state
        report.head_changed = True
        from ee.index.provenance import provenance

        return provenance(self.git, old_state)

    def _events(
        self,
        events: dict[str, Stamp],
        manifest: dict[str, Any] | None,
        old_state: dict[str, Any],
        report: SyncReport,
    ) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
        from ee.store.feedback import read_events_file

        old_stamps = (manifest or {}).get("events", {}) if old_state else {}
        event_map: dict[str, list[dict[str, Any]]] = dict(old_state.get("events", {}))
        kept: dict[str, list[dict[str, Any]]] = {}  # the problems of each events file read before
        for p in old_state.get("problems", []):
            if p.get("code") == "event_invalid":
                kept.setdefault(p["path"], []).append(p)
        problems: list[dict[str, Any]] = []
        for rel in set(old_stamps) - set(events):
            event_map.pop(Path(rel).stem, None)
            report.events_changed += 1
        for rel, st in events.items():
            # Unchanged since it was read: its events and its problems stand (a file holding only invalid
            # lines has no events entry, but its problems were kept: reading it again would repeat them).
            if old_stamps.get(rel) == st and (Path(rel).stem in event_map or rel in kept):
                problems.extend(kept.get(rel, []))
                continue
            items, bad = read_events_file(self.root / rel, rel)
            event_map[Path(rel).stem] = items
            problems.extend(bad)
            report.events_changed += 1
        return {k: v for k, v in sorted(event_map.items()) if v}, problems

    def _save(
        self,
        gen: Generation,
        state: dict[str, Any],
        head: str,
        found: Scan,
        blobs: dict[str, Any],
        racy: list[str],
        model_id: str | None,
        old_head: Path | None = None,
    ) -> dict[str, Any]:
        folder = self.root / INDEX_DIR
        name = f"gen-{time.time_ns():x}-{os.getpid()}"
        gen.save(folder / name)
        crash_point("index.generation")
        save_state(folder / name, state, old_head)
        record = stamps_record(found, blobs, racy)
        write_private(folder / name / STAMPS, marshal.dumps(record))
        stamps = parse_stamps(record)
        manifest = {
            "format": FORMAT,
            "generation": name,
            "model_id": model_id,
            "cache": CACHE_VERSION,
            "head": head,
            "max_bytes": self.max_bytes,
            "count": gen.size,
            "built": time.time(),
        }
        tmp = folder / f"manifest.json.{os.getpid()}.tmp"
        write_private(tmp, json.dumps(manifest).encode("utf-8"))
        crash_point("index.manifest")
        os.replace(tmp, folder / "manifest.json")
        prune(folder, keep=name)
        return manifest | stamps


def _read(path: Path, folder: Path, max_bytes: int = MAX_BODY_BYTES) -> bytes | None:
    """A memory file's bytes; None for a file the store skips too (:func:`_skip_reason`) or a vanished one."""
    try:
        if _skip_reason(path, folder, max_bytes):
            return None
        return path.read_bytes()
    except OSError:
        return None


def _skip_reason(path: Path, folder: Path, max_bytes: int) -> str | None:
    """Why a memory file is not read, as ``Store.read_bytes`` says it: a link leaving ``memories/``, a FIFO
    (reading it would block forever) or device, a file over the size cap. None when it is readable."""
    if shown_path(str(path)) != str(path):
        return "the file name is not UTF-8"
    try:
        if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(folder.resolve()):
            return "symlink points outside memories/"
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink loop, no permission
        return f"cannot be read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, socket or device)"
    if st.st_size > max_bytes:
        return f"file is {st.st_size} bytes, more than the limit of {max_bytes}"
    return None


def _larger_than(found: Scan, max_bytes: int) -> set[str]:
    """The scanned files over ``max_bytes`` (their stamps hold their sizes)."""
    return {found.paths[i] for i in np.flatnonzero(found.field(2) > max_bytes).tolist()}
