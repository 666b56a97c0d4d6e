"""Keeping the index equal to the store: a cheap freshness check, then an incremental update.

The manifest (``.ee/index/manifest.json``) records the store state the current generation reflects:
every memory and events file's (mtime, ctime, size, inode) stamp and blob id, and what HEAD named. A
query stats the files (no reading, no git process) and compares: the paths in the order the scan met
them as one byte string and their stamps as one int64 buffer, each against the saved one in a single
C-level comparison (no per-file tuple or dict unless something differs). Only when something differs
does it take the index lock and update: read the changed files, reuse derived data by blob id from the cache,
derive the rest, and write a new generation. New, modified, deleted and moved (same blob, new path)
files are reported like a sync.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import marshal
import os
import stat
import time
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import ee.model
from ee._crash import crash_point
from ee.config import open_regular, read_settings_file, write_private
from ee.git.repo import blob_id, holds_nothing
from ee.index.cache import CACHE_VERSION, DerivedCache
from ee.index.segment import Entry, Generation, PackedMap, join_strings, no_gc, split_strings
from ee.policy.secrets import name_record
from ee.store.files import (
    EVENTS,
    INDEX_DIR,
    MANIFEST,
    MAX_BODY_BYTES,
    MEMORIES,
    keep_order,
    make_state_folder,
    shown_path,
)
from ee.store.walk import memory_files

if TYPE_CHECKING:
    from ee.index.transformer import VectorReport

CACHE_PATH = ".ee/cache/derived.sqlite"
# 3: stamps in stamps.marshal; 4: tuples, blob ids apart; 5: racy files; 6: head.marshal;
# 7: stamps as buffers in scan order, records and bodies packed (see ee.index.segment.LAYOUT);
# 8: generations of layout 5 only (an index written before is built again, from the derived cache);
# 9: head.marshal names the memories agents wrote (agent_memories);
# 10: an id derived from a path holding a secret is masked (ee.policy.secrets.path_id);
# 11: an id derived from a path is always a valid id (ee.store.frontmatter.fit_id)
FORMAT = 11
STAMPS = "stamps.marshal"
KEEP_GENERATIONS = 2
_EMBED_CHUNK = 1024  # texts per encode call: progress steps (the result does not depend on it)

Progress = ee.model.Progress  # (phase, done, total): "parse" / "embed" while (re)building


def _no_progress(phase: str, done: int, total: int) -> None:
    """The default progress callback: report nothing."""


# The classes here and in ee.index.segment / lexical / cache are plain slotted classes, not dataclasses:
# building a dataclass costs ~0.6 ms at import, and every fresh `ee search` imports these modules.


class SyncReport:
    """What an update did: files new, modified, deleted and moved, events re-read, HEAD moved, rebuilt;
    ``seconds`` the index's time. ``ee index rebuild`` adds ``transformer``: what it did of the
    transformer arm's vectors after the index (``ee.index.transformer.VectorReport``)."""

    __slots__ = (
        "deleted",
        "events_changed",
        "head_changed",
        "modified",
        "moved",
        "new",
        "reason",
        "rebuilt",
        "seconds",
        "transformer",
    )

    def __init__(self) -> None:
        self.new: list[str] = []
        self.modified: list[str] = []
        self.deleted: list[str] = []
        self.moved: list[tuple[str, str]] = []
        self.events_changed = 0
        self.head_changed = False
        self.rebuilt = False
        self.reason = ""
        self.seconds = 0.0
        self.transformer: VectorReport | None = None

    @property
    def changed(self) -> bool:
        return bool(
            self.new
            or self.modified
            or self.deleted
            or self.moved
            or self.events_changed
            or self.head_changed
            or self.rebuilt
        )

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
        } | ({"transformer": self.transformer.to_dict()} if self.transformer is not None else {})


# (mtime ns, ctime ns, size, inode): tuples, so that two stamp maps compare in one C-level ==
Stamp = tuple[int, int, int, int]


def stamp(st: os.stat_result) -> Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _stamp_map(paths: list[str], values: array[int]) -> dict[str, Stamp]:
    """The sorted ``{path: stamp}`` map of paths and their stamps, four values each."""
    it = iter(values)
    return dict(sorted(zip(paths, zip(it, it, it, it, strict=True), strict=True)))


class Scan:
    """Every memory file's stamp, in the order the directory walk met them (stable while no directory
    changes), and the events files' stamps. ``files``, the sorted ``{path: stamp}`` map, is built only
    when an update needs it."""

    __slots__ = ("_files", "_key", "events", "paths", "stamps")

    def __init__(self, paths: list[str], stamps: array[int], events: dict[str, Stamp]) -> None:
        self.paths = paths
        self.stamps = stamps  # 'q': mtime ns, ctime ns, size, inode per path
        self.events = events
        self._files: dict[str, Stamp] | None = None
        self._key: tuple[bytes, bytes] | None = None

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def files(self) -> dict[str, Stamp]:
        if self._files is None:
            self._files = _stamp_map(self.paths, self.stamps)
        return self._files

    def field(self, index: int) -> np.ndarray:
        """One field of every file's stamp, in ``paths`` order: 0 mtime ns, 1 ctime ns, 2 size, 3 inode."""
        if not self.paths:
            return np.zeros(0, np.int64)
        return np.frombuffer(self.stamps, dtype=np.int64)[index::4]

    def key(self) -> tuple[bytes, bytes]:
        """(paths, stamps) as the manifest stores them."""
        if self._key is None:
            self._key = (join_strings(self.paths), self.stamps.tobytes())
        return self._key


class Stamps:
    """The saved picture a generation reflects (``stamps.marshal``): the scan's key, each file's blob id
    (in the same order; "" for a file that could not be read) and the racy files."""

    __slots__ = ("_files", "blob_ids", "paths", "stamps")

    def __init__(self, paths: bytes, stamps: bytes, blob_ids: bytes) -> None:
        self.paths = paths
        self.stamps = stamps
        self.blob_ids = blob_ids
        self._files: dict[str, Stamp] | None = None

    def __eq__(self, other: object) -> bool:
        """The same picture (a reader compares manifests read twice: damage, or a concurrent write?)."""
        if not isinstance(other, Stamps):
            return NotImplemented
        return (self.paths, self.stamps, self.blob_ids) == (other.paths, other.stamps, other.blob_ids)

    __hash__ = None  # type: ignore[assignment]

    @property
    def files(self) -> dict[str, Stamp]:
        if self._files is None:
            values = array("q")
            values.frombytes(self.stamps)
            self._files = _stamp_map(split_strings(self.paths), values)
        return self._files

    @property
    def blobs(self) -> dict[str, str]:
        """Path → blob id ("" for a file that could not be read)."""
        paths = split_strings(self.paths)
        # One unreadable file alone joins to b"", which split_strings reads as no string at all.
        blob_ids = split_strings(self.blob_ids) if self.blob_ids else [""] * len(paths)
        return dict(zip(paths, blob_ids, strict=True))


def _differences(saved: Stamps, found: Scan) -> tuple[set[str], list[str]]:
    """(paths whose stamp is new or changed, paths gone, sorted) from the saved picture to ``found``.

    The same paths in the same order (an edit in place, a touch) compare as two int64 tables; only a
    different set or order of files builds the ``{path: stamp}`` maps."""
    paths, stamps = found.key()
    if saved.paths == paths:
        old = np.frombuffer(saved.stamps, dtype=np.int64).reshape(-1, 4)
        new = np.frombuffer(stamps, dtype=np.int64).reshape(-1, 4)
        return {found.paths[i] for i in np.flatnonzero((old != new).any(axis=1)).tolist()}, []
    old_files, files = saved.files, found.files
    return {rel for rel, _st in files.items() - old_files.items()}, sorted(old_files.keys() - files.keys())


def _stamps_record(found: Scan, blobs: dict[str, Any], racy: list[str]) -> dict[str, Any]:
    """What ``stamps.marshal`` holds for ``found`` (bytes and small values only: it loads in microseconds)."""
    paths, stamps = found.key()
    blob_ids = join_strings([blobs.get(rel) or "" for rel in found.paths])
    return {"paths": paths, "stamps": stamps, "blobs": blob_ids, "events": found.events, "racy": racy}


def _parse_stamps(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(
        isinstance(value.get(k), bytes) for k in ("paths", "stamps", "blobs")
    ):
        raise ValueError("stamps damaged")
    if not isinstance(value.get("events"), dict) or not isinstance(value.get("racy"), list):
        raise ValueError("stamps damaged")
    if len(value["stamps"]) % 32 or not _counts_agree(value["paths"], value["stamps"], value["blobs"]):
        raise ValueError("stamps damaged")
    return {
        "stamps": Stamps(value["paths"], value["stamps"], value["blobs"]),
        "events": value["events"],
        "racy": value["racy"],
    }


def _counts_agree(paths: bytes, stamps: bytes, blob_ids: bytes) -> bool:
    """One stamp and one blob id per path (counted, not split: every query reads the stamps)."""
    count = paths.count(b"\0") + 1 if paths else 0
    blob_count = blob_ids.count(b"\0") + 1 if blob_ids else min(count, 1)  # b"": no ids, or one ""
    return len(stamps) == 32 * count and blob_count == count


def scan(root: Path) -> Scan:
    """Stat every memory file (:func:`ee.store.walk.memory_files`) and every events file: the cheap picture
    of the store's state. Stamps go straight into one int64 buffer."""
    paths: list[str] = []
    stamps = array("q")
    for rel, st in memory_files(root):
        paths.append(rel)
        stamps.extend((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
    events: dict[str, Stamp] = {}
    try:
        entries = os.scandir(root / EVENTS)
    except OSError as exc:
        if not holds_nothing(exc):
            raise
        entries = None
    if entries is not None:
        with entries, contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in entries:
                if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        events[f"{EVENTS}/{entry.name}"] = stamp(entry.stat(follow_symlinks=False))
    return Scan(paths, stamps, dict(sorted(events.items())))


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The manifest with its generation's file stamps (``stamps``, ``events``, ``racy``); None when there is
    no index (or one in an older format: rebuilt without fuss); ``{"corrupt": True}`` when it is damaged."""
    path = root / MANIFEST
    for _attempt in range(3):
        try:
            manifest = json.loads(read_settings_file(path))  # (a FIFO there: corrupt, not a hang)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"corrupt": True}
        if not isinstance(manifest, dict) or not isinstance(manifest.get("generation"), str):
            return {"corrupt": True}
        if manifest.get("format") != FORMAT:
            return None
        try:
            manifest.update(_parse_stamps(_load_marshal(root / INDEX_DIR / manifest["generation"] / STAMPS)))
        except (OSError, ValueError, EOFError, TypeError):
            continue  # pruned by a writer since we read the manifest (look again), or damaged
        return manifest
    return {"corrupt": True}


def is_fresh(
    manifest: dict[str, Any] | None,
    head: str,
    found: Scan,
    model_id: str | None,
    max_bytes: int,
    trust_racy: bool = False,
) -> bool:
    """Does the saved index reflect this state, read with the size limit ``max_bytes`` (see
    :func:`body_limit`)? Racy files (see :func:`racy_files`) say no unless ``trust_racy`` (``ee index
    status``: they are re-read by the next update, not stale)."""
    if not manifest or manifest.get("corrupt"):
        return False
    if manifest["head"] != head or manifest["model_id"] != model_id or manifest["cache"] != CACHE_VERSION:
        return False
    if manifest.get("max_bytes") != max_bytes:
        return False
    saved: Stamps = manifest["stamps"]
    paths, stamps = found.key()
    same = saved.stamps == stamps and saved.paths == paths and manifest["events"] == found.events
    return bool(same and (trust_racy or not manifest["racy"]))


RACY_NS = 50_000_000  # a file changed this close before its stat may change again with the same stamp
# A file system that keeps whole seconds (ext4 with 128-byte inodes, ext3, HFS+, some network mounts; FAT
# keeps two) gives every write of the same second one stamp: such a stamp is trusted two seconds after it.
COARSE_TICK_NS = 2_000_000_000


def racy_files(found: Scan, scanned_at: int) -> list[str]:
    """Files whose stamp is too recent to trust (git calls them racily clean). With a coarse file-system
    clock (one tick is 1-10 ms on many kernels, a second or two on some file systems), a write right
    after the stat can leave mtime, ctime, size and inode all unchanged: such files are read again by
    the next update, whatever their stamp."""
    # ctime alone: every write sets it to the (coarse) present, whatever mtime says (touch -d, git).
    low, high = scanned_at - RACY_NS, scanned_at + 1_000_000_000
    ctimes = found.field(1)
    # A stamp in whole seconds stands for any moment of its tick: seen as the tick's end. (On a file system
    # with finer stamps, one in a billion falls on a second and is read once more: no harm.)
    ends = ctimes + np.where(ctimes % 1_000_000_000 == 0, COARSE_TICK_NS, 0)
    return sorted(found.paths[i] for i in np.flatnonzero((ends >= low) & (ctimes <= high)).tolist())


@contextlib.contextmanager
def index_lock(root: Path, timeout: float = 120.0) -> Iterator[None]:
    """Serialises index writers (queries that catch up, the watcher, rebuild). Readers never wait."""
    folder = root / INDEX_DIR
    make_state_folder(folder)
    fd = open_regular(folder / "lock", os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    from ee.errors import LockTimeout

                    raise LockTimeout(
                        "another ee process is updating the index", "try again in a moment"
                    ) from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


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
                    _load_state(folder),
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
            moved_stamps, gone = _differences(saved, found)
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
        _keep_warm(self.root / INDEX_DIR / new_manifest["generation"], (new_gen, state, True))
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
        record = _stamps_record(found, old_blobs, racy)
        tmp = folder / f"{STAMPS}.{os.getpid()}.tmp"
        write_private(tmp, marshal.dumps(record))
        os.replace(tmp, folder / STAMPS)
        report.seconds = time.perf_counter() - started
        stamps = _parse_stamps(record)
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
        _save_state(folder / name, state, old_head)
        record = _stamps_record(found, blobs, racy)
        write_private(folder / name / STAMPS, marshal.dumps(record))
        stamps = _parse_stamps(record)
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
        _prune(folder, keep=name)
        return manifest | stamps


# One open connection per derived cache, for the WARM_WORKSPACES caches used last: each holds four file
# descriptors (the database, its WAL and shared memory), so a process that touches many workspaces (the
# per-user server, a test run, a script over many repositories) closes the least recently used one.
_CACHES: OrderedDict[str, tuple[tuple[int, int], DerivedCache]] = OrderedDict()


def shared_cache(path: Path) -> DerivedCache:
    """This process's connection to the derived cache at ``path``, opened once. Closing it after every
    update cost a WAL checkpoint each time (~20 ms); a replaced file (``rm -rf .ee/cache``) is reopened."""
    key = str(path)
    cached = _CACHES.pop(key, None)
    if cached is not None:
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == cached[0]:
            _CACHES[key] = cached
            return cached[1]
        cached[1].close()
    cache = DerivedCache(path)
    st = path.stat()
    _CACHES[key] = ((st.st_dev, st.st_ino), cache)
    while len(_CACHES) > WARM_WORKSPACES:
        _CACHES.popitem(last=False)[1][1].close()
    return cache


# The generation of each workspace this process wrote or opened last, kept in memory: a long-lived process
# (the per-user server, an MCP server, a --batch of queries) then updates and answers without reading it
# back. One entry per workspace, replaced by its next generation, for at most WARM_WORKSPACES workspaces
# (the least recently used is dropped first). A generation folder never changes once saved (a new state
# is a new folder), so what was read from it stays what it holds. Records are shared with the views
# handed out, which treat them as read-only. The flag says whether the update-only columns (paths, blob
# ids, term frequencies) are in memory: a generation opened for queries lacks them.
_WARM: OrderedDict[str, tuple[Generation, dict[str, Any], bool]] = OrderedDict()
WARM_WORKSPACES = 8


def _keep_warm(folder: Path, entry: tuple[Generation, dict[str, Any], bool]) -> None:
    """Hold ``entry`` as the generation of ``folder``'s workspace (its previous one is let go)."""
    index = str(folder.parent) + os.sep
    for key in [key for key in _WARM if key.startswith(index)]:
        del _WARM[key]
    _WARM[str(folder)] = entry
    while len(_WARM) > WARM_WORKSPACES:
        _WARM.popitem(last=False)


def forget_warm(root: Path) -> None:
    """Let go of the generation and the cache connection held for the workspace at ``root`` (the
    server closed it)."""
    index = str(root / INDEX_DIR) + os.sep
    for key in [key for key in _WARM if key.startswith(index)]:
        del _WARM[key]
    cached = _CACHES.pop(str(root / CACHE_PATH), None)
    if cached is not None:
        cached[1].close()


def warm(folder: Path) -> tuple[Generation, dict[str, Any]] | None:
    """The generation saved in ``folder`` and its state, if this process wrote it (else None): complete,
    an update may start from it."""
    kept = _WARM.get(str(folder))
    return (kept[0], kept[1]) if kept is not None and kept[2] else None


def open_generation(folder: Path) -> tuple[Generation, dict[str, Any]]:
    """The generation in ``folder`` and its state, for queries: the one this process holds, else loaded and
    kept (raises OSError/ValueError/... when it is damaged, as :meth:`Generation.load` does).

    A query in a process that asked before (the in-process API, an MCP server, ``ee search --batch``)
    then skips the load and keeps what ranking derived from the generation (standings, masks)."""
    kept = _WARM.get(str(folder))
    if kept is not None:
        _WARM.move_to_end(str(folder))
        return kept[0], kept[1]
    gen, state = Generation.load(folder), _load_state(folder)
    _keep_warm(folder, (gen, state, False))
    return gen, state


def drop_duplicate_ids(gen: Generation, dim: int | None) -> tuple[Generation, list[dict[str, Any]]]:
    """Keep one file per memory id, as the store does (:func:`ee.store.files.keep_order`); report the
    rest."""
    if len(set(gen.ids)) == gen.size:
        return gen, []
    by_id: dict[str, list[int]] = {}
    for pos, memory_id in enumerate(gen.ids):
        by_id.setdefault(memory_id, []).append(pos)
    drop: list[int] = []
    problems: list[dict[str, Any]] = []
    for memory_id, positions in by_id.items():
        if len(positions) < 2:
            continue
        ordered = sorted(positions, key=lambda p: keep_order(memory_id, gen.paths[p]))
        first = gen.paths[ordered[0]]
        for pos in ordered[1:]:
            drop.append(pos)
            path = gen.paths[pos]
            problems.append(
                {
                    "code": "duplicate_id",
                    "severity": "error",
                    "path": path,
                    "line": 2,
                    "key": "id",
                    "message": f"id {memory_id} is also used by {first}",  # (answers add "not indexed")
                    "repair": f"give one of the files a new id: edit the 'id:' line of {path}",
                }
            )
    if not drop:
        return gen, []
    return gen.updated(drop, [], dim), problems


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


def body_limit(root: Path) -> int:
    """``store.max_body_bytes``, read now (a long-lived process sees a change): the size past which a
    memory file is skipped. The index records the limit it was read with, and catches up when it moves."""
    from ee.config import load_config
    from ee.errors import ConfigError

    try:
        return int(load_config(root).get("store.max_body_bytes"))
    except ConfigError:
        return MAX_BODY_BYTES  # a broken config is reported by `ee doctor`; the index keeps the default


HEAD_STATE = "head.marshal"  # what HEAD names (changes with HEAD only): provenance, head_blobs, head_commit,
_HEAD_KEYS = ("provenance", "head_blobs", "head_commit", "agent_memories", "agent_ids")  # agent_memories


def _save_state(folder: Path, state: dict[str, Any], old_head: Path | None) -> None:
    rest = {k: v for k, v in state.items() if k not in _HEAD_KEYS}
    write_private(folder / "state.marshal", marshal.dumps(rest))
    if old_head is not None:
        try:
            os.link(old_head, folder / HEAD_STATE)
            return
        except OSError:
            pass  # pruned meanwhile, or a file system without hard links: write it
    head = {
        "head_commit": state["head_commit"],
        "provenance": PackedMap.of(state["provenance"]).to_record(),
        "head_blobs": PackedMap.of(state["head_blobs"]).to_record(),
        "agent_memories": PackedMap.of(state["agent_memories"]).to_record(),
        "agent_ids": PackedMap.of(state["agent_ids"]).to_record(),
    }
    write_private(folder / HEAD_STATE, marshal.dumps(head))


def _load_state(folder: Path) -> dict[str, Any]:
    """The state; what HEAD names for every file (``provenance``, ``head_blobs``, ``agent_memories``,
    ``agent_ids``) as :class:`PackedMap` tables whose entries are decoded when looked up (a store whose
    memories agents wrote holds one entry per memory in the last two: no query builds their dicts)."""
    state: dict[str, Any] = _load_marshal(folder / "state.marshal")
    head = _load_marshal(folder / HEAD_STATE)
    state["head_commit"] = head["head_commit"]
    state["provenance"] = PackedMap.from_record(head["provenance"])
    state["head_blobs"] = PackedMap.from_record(head["head_blobs"])
    state["agent_memories"] = PackedMap.from_record(head["agent_memories"])
    state["agent_ids"] = PackedMap.from_record(head["agent_ids"])
    return state


def _load_marshal(path: Path) -> Any:
    """One of our own marshal files, read with the garbage collector paused (it is half the cost of
    building 10k small dicts otherwise); not a dict → ValueError."""
    data = path.read_bytes()
    with no_gc():
        value = marshal.loads(data)  # noqa: S302 - our own file
    if not isinstance(value, dict):
        raise ValueError(f"{path} is damaged")
    return value


def _prune(folder: Path, keep: str) -> None:
    """Delete old generations, keeping the newest few for readers that opened them a moment ago."""
    import shutil  # (here: shutil and the compression modules it loads cost a query ~2.5 ms)

    found = (p for p in folder.glob("gen-*") if p.is_dir() and not p.is_symlink())  # (a link: not ours)
    gens = sorted(found, key=lambda p: p.stat().st_mtime)
    old = [p for p in gens if p.name != keep][: -(KEEP_GENERATIONS - 1) or None]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
