"""Keeping the index equal to the store: a cheap freshness check, then an incremental update.

The manifest (``.ee/index/manifest.json``) records the store state the current generation reflects:
every memory and events file's (mtime, ctime, size, inode) stamp and blob id, and what HEAD named. A
query stats the files (no reading, no git process) and compares; only when something differs does it
take the index lock and update: read the changed files, reuse derived data by blob id from the cache,
derive the rest, and write a new generation. New, modified, deleted and moved (same blob, new path)
files are reported like a sync.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ee._crash import crash_point
from ee.gitrepo import blob_id, iter_memory_files
from ee.index.cache import CACHE_VERSION, DerivedCache
from ee.index.derive import derive
from ee.index.segment import Entry, Generation
from ee.store import EVENTS, MAX_BODY_BYTES, MEMORIES, shown_path

INDEX_DIR = ".ee/index"
CACHE_PATH = ".ee/cache/derived.sqlite"
FORMAT = 2
KEEP_GENERATIONS = 2


@dataclass(slots=True)
class SyncReport:
    new: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    events_changed: int = 0
    head_changed: bool = False
    rebuilt: bool = False
    reason: str = ""
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.new or self.modified or self.deleted or self.moved or self.events_changed
                    or self.head_changed or self.rebuilt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "modified": self.modified,
            "deleted": self.deleted,
            "moved": [{"from": a, "to": b} for a, b in self.moved],
            "events_changed": self.events_changed,
            "head_changed": self.head_changed,
            "rebuilt": self.rebuilt,
            "reason": self.reason,
            "seconds": round(self.seconds, 4),
        }


def stamp(st: os.stat_result) -> list[int]:
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]


def scan(root: Path) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Stat every memory file and every events file: the cheap picture of the store's state."""
    files = {rel: stamp(st) for rel, st in iter_memory_files(root, MEMORIES)}
    events: dict[str, list[int]] = {}
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(root / EVENTS):
            if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                events[f"{EVENTS}/{entry.name}"] = stamp(entry.stat(follow_symlinks=False))
    return files, events


def read_manifest(root: Path) -> dict[str, Any] | None:
    path = root / INDEX_DIR / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"corrupt": True}
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return {"corrupt": True}
    return manifest


def is_fresh(manifest: dict[str, Any] | None, head: str, files: dict[str, list[int]],
             events: dict[str, list[int]], model_id: str | None) -> bool:
    if not manifest or manifest.get("corrupt"):
        return False
    if manifest["head"] != head or manifest["model_id"] != model_id or manifest["cache"] != CACHE_VERSION:
        return False
    known = manifest["files"]
    if len(known) != len(files) or manifest["events"] != events:
        return False
    return all(known.get(rel, [None])[:4] == st for rel, st in files.items())


@contextlib.contextmanager
def index_lock(root: Path, timeout: float = 120.0) -> Iterator[None]:
    """Serialises index writers (queries that catch up, the watcher, rebuild). Readers never wait."""
    folder = root / INDEX_DIR
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    from ee.errors import LockTimeout

                    raise LockTimeout("another ee process is updating the index", "try again in a moment") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


class Updater:
    """Brings the saved index up to the store's current state (call under :func:`index_lock`)."""

    def __init__(self, root: Path, git: Any, embedder: Any, model_key: str | None) -> None:
        self.root = root
        self.git = git
        self.embedder = embedder  # None → lexical only
        self.model_key = model_key  # what the manifest compares; set even when the model failed to load
        self.cache = DerivedCache(root / CACHE_PATH)
        self.max_bytes = _max_body_bytes(root)

    @property
    def vector_key(self) -> str | None:
        """Vectors are cached under the model's content id, so a moved model folder keeps them."""
        if self.embedder is None:
            return None
        return str(getattr(self.embedder, "real_id", self.embedder.model_id))

    def run(self, manifest: dict[str, Any] | None, head: str, files: dict[str, list[int]],
            events: dict[str, list[int]], force: bool = False) -> tuple[Generation, dict[str, Any], SyncReport]:
        started = time.perf_counter()
        report = SyncReport()
        model_id = self.model_key
        old_gen: Generation | None = None
        old_state: dict[str, Any] = {}
        if manifest and not manifest.get("corrupt") and not force and manifest["cache"] == CACHE_VERSION:
            try:
                folder = self.root / INDEX_DIR / manifest["generation"]
                old_gen = Generation.load(folder, for_update=True)
                old_state = _load_state(folder)
            except (OSError, ValueError, EOFError, KeyError, TypeError):
                old_gen, report.reason = None, "the index was damaged and has been rebuilt"
        elif manifest and manifest.get("corrupt"):
            report.reason = "the index manifest was damaged and has been rebuilt"
        if old_gen is None or manifest is None or manifest.get("model_id") != model_id:
            report.rebuilt = True
            report.reason = report.reason or ("full build" if old_gen is None else "the embedding model changed")
            old_gen, old_files = Generation(), {}
        else:
            old_files = manifest["files"]
        changed = [rel for rel, st in files.items() if old_files.get(rel, [None])[:4] != st]
        datas = {rel: _read(self.root / rel, self.root / MEMORIES, self.max_bytes) for rel in changed}
        blobs = {rel: blob_id(data) for rel, data in datas.items() if data is not None}
        unchanged_blob = [rel for rel in changed if rel in old_files and blobs.get(rel) == old_files[rel][4]]
        really = [rel for rel in changed if rel not in unchanged_blob and rel in blobs]
        removed = [rel for rel in old_files if rel not in files or rel in really]
        head_info = self._head_info(manifest, head, old_state, report)
        gone_blobs = {old_files[rel][4]: rel for rel in old_files if rel not in files}
        for rel in really:
            if rel in old_files:
                report.modified.append(rel)
            elif blobs[rel] in gone_blobs:
                report.moved.append((gone_blobs.pop(blobs[rel]), rel))
            else:
                report.new.append(rel)
        report.deleted = [rel for rel in old_files if rel not in files and rel in gone_blobs.values()]
        entries = self._entries(really, datas, blobs, head_info["head_blobs"])
        positions = {r["path"]: i for i, r in enumerate(old_gen.records)}
        remove = [positions[rel] for rel in removed if rel in positions]
        dim = self.embedder.dim if self.embedder else None
        new_gen = old_gen.updated(remove, entries, dim)
        for record in new_gen.records:  # a commit of a hand edit changes only this flag
            record["committed"] = head_info["head_blobs"].get(record["path"]) == record["blob"]
        # A file touched but not changed (same blob) keeps its problems: it is not parsed again.
        recheck = [rel for rel in changed if rel not in unchanged_blob]
        problems = [p for p in old_state.get("problems", []) if p["path"] in files and p["path"] not in recheck]
        problems += self._problems(entries, recheck, datas)
        event_map, event_problems = self._events(events, manifest, old_state, report)
        state = {
            "problems": sorted(problems + event_problems, key=lambda p: (p["path"], p.get("line") or 0)),
            "events": event_map,
            "provenance": head_info["provenance"],
            "head_blobs": head_info["head_blobs"],
            "head_commit": head_info["head_commit"],
        }
        new_manifest = self._save(new_gen, state, head, files, events, blobs, old_files, model_id)
        new_manifest["semantic"] = new_gen.vectors is not None
        report.seconds = time.perf_counter() - started
        return new_gen, new_manifest | {"state": state}, report

    # ---------------------------------------------------------------------------- pieces

    def _entries(self, rels: list[str], datas: dict[str, bytes | None], blobs: dict[str, str],
                 head_blobs: dict[str, str]) -> list[Entry]:
        model_id = self.vector_key
        cached = self.cache.get_many((blobs[rel] for rel in rels), model_id)
        fresh: dict[str, Any] = {}
        for rel in rels:
            blob = blobs[rel]
            if blob not in cached and blob not in fresh:
                data = datas[rel]
                assert data is not None
                fresh[blob] = derive(data, rel)
        derived = cached | fresh
        need_vectors = {b: d for b, d in derived.items() if d.vector is None and "error" not in d.record}
        if self.embedder and need_vectors:
            from ee.index.derive import embed_text

            order = sorted(need_vectors)
            texts = [embed_text(need_vectors[b].body, need_vectors[b].record["tags"], need_vectors[b].record["kind"])
                     for b in order]
            matrix = self.embedder.encode(texts)
            for blob, row in zip(order, matrix, strict=True):
                need_vectors[blob].vector = row.astype("float32").tobytes()
                fresh[blob] = need_vectors[blob]
        self.cache.put_many(fresh, model_id)
        import numpy as np

        entries = []
        for rel in rels:
            item = derived[blobs[rel]]
            if "error" in item.record:
                continue
            record = dict(item.record)
            if record.get("id_from_path"):
                from ee.frontmatter import _id_from_path

                record["id"] = _id_from_path(rel)
            vector = np.frombuffer(item.vector, dtype=np.float32) if item.vector is not None else None
            entries.append(Entry(rel, blobs[rel], head_blobs.get(rel) == blobs[rel], record, item.body,
                                 item.tokens, vector))
        return entries

    def _problems(self, entries: list[Entry], changed: list[str], datas: dict[str, bytes | None]) -> list[dict[str, Any]]:
        """Errors of unreadable files, warnings of readable ones, and duplicate ids."""
        out: list[dict[str, Any]] = []
        ok = {e.path for e in entries}
        model_id = self.vector_key
        for rel in changed:
            data = datas.get(rel)
            if data is None:
                reason = _skip_reason(self.root / rel, self.root / MEMORIES, self.max_bytes)
                if reason:  # (a file that vanished meanwhile has none: the next update drops it)
                    shown = shown_path(rel)
                    out.append({"code": "memory_invalid", "severity": "error", "path": shown, "line": None,
                                "message": reason, "repair": f"move {shown} out of memories/ (see ee doctor)"})
                continue
            if rel not in ok:
                derived = self.cache.get_many([blob_id(data)], model_id).get(blob_id(data))
                error = derived.record["error"] if derived else {"message": "unreadable", "line": None}
                out.append({"code": "memory_invalid", "severity": "error", "path": rel, **error})
        for entry in entries:
            for warning in entry.record.get("warnings", []):
                out.append({**warning, "path": entry.path})
            if entry.record.get("secrets"):
                out.append({"code": "secret_in_file", "severity": "error", "path": entry.path,
                            "message": f"holds secret(s): {', '.join(entry.record['secrets'])} (masked in output)",
                            "repair": f"remove the secret from {entry.path} and commit"})
        return out

    def _head_info(self, manifest: dict[str, Any] | None, head: str, old_state: dict[str, Any],
                   report: SyncReport) -> dict[str, Any]:
        if manifest and manifest.get("head") == head and "head_blobs" in old_state:
            return old_state
        report.head_changed = True
        from ee.index.provenance import provenance

        return provenance(self.git, old_state)

    def _events(self, events: dict[str, list[int]], manifest: dict[str, Any] | None, old_state: dict[str, Any],
                report: SyncReport) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
        from ee.feedback_store import read_events_file

        old_stamps = (manifest or {}).get("events", {}) if old_state else {}
        event_map: dict[str, list[dict[str, Any]]] = dict(old_state.get("events", {}))
        problems = [p for p in old_state.get("problems", []) if p.get("code") == "event_invalid"
                    and p["path"] in events and old_stamps.get(p["path"]) == events[p["path"]]]
        for rel in set(old_stamps) - set(events):
            event_map.pop(Path(rel).stem, None)
            report.events_changed += 1
        for rel, st in events.items():
            if old_stamps.get(rel) == st and Path(rel).stem in event_map:
                continue
            items, bad = read_events_file(self.root / rel, rel)
            event_map[Path(rel).stem] = items
            problems.extend(bad)
            report.events_changed += 1
        return {k: v for k, v in sorted(event_map.items()) if v}, problems

    def _save(self, gen: Generation, state: dict[str, Any], head: str, files: dict[str, list[int]],
              events: dict[str, list[int]], blobs: dict[str, str], old_files: dict[str, Any],
              model_id: str | None) -> dict[str, Any]:
        import marshal

        folder = self.root / INDEX_DIR
        name = f"gen-{time.time_ns():x}-{os.getpid()}"
        gen.save(folder / name)
        crash_point("index.generation")
        (folder / name / "state.marshal").write_bytes(marshal.dumps(state))
        manifest = {
            "format": FORMAT,
            "generation": name,
            "model_id": model_id,
            "cache": CACHE_VERSION,
            "head": head,
            "count": gen.size,
            "built": time.time(),
            "files": {rel: st + [blobs.get(rel) or old_files.get(rel, [None] * 5)[4]] for rel, st in files.items()},
            "events": events,
        }
        tmp = folder / f"manifest.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(manifest), encoding="utf-8")
        crash_point("index.manifest")
        os.replace(tmp, folder / "manifest.json")
        _prune(folder, keep=name)
        return manifest


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


def _max_body_bytes(root: Path) -> int:
    from ee.config import load_config
    from ee.errors import ConfigError

    try:
        return int(load_config(root).get("store.max_body_bytes"))
    except ConfigError:
        return MAX_BODY_BYTES  # a broken config is reported by `ee doctor`; the index keeps the default


def _load_state(folder: Path) -> dict[str, Any]:
    import marshal

    state: dict[str, Any] = marshal.loads((folder / "state.marshal").read_bytes())  # noqa: S302 - our own file
    return state


def load_state(root: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    return _load_state(root / INDEX_DIR / manifest["generation"])


def _prune(folder: Path, keep: str) -> None:
    """Delete old generations, keeping the newest few for readers that opened them a moment ago."""
    gens = sorted((p for p in folder.glob("gen-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    old = [p for p in gens if p.name != keep][:-(KEEP_GENERATIONS - 1) or None]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
