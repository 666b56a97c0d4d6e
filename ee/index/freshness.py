"""Keeping the index equal to the store: a cheap freshness check, then an incremental update.

The manifest (``.ee/index/manifest.json``) records the store state the current generation reflects:
every memory and events file's (mtime, ctime, size, inode) stamp and blob id, and what HEAD named. A
query stats the files (no reading, no git process) and compares: the paths in the order the scan met
them as one byte string and their stamps as one int64 buffer, each against the saved one in a single
C-level comparison (no per-file tuple or dict unless something differs). Only when something differs
does it take the index lock and update: read the changed files, reuse derived data by blob id from the cache,
derive the rest, and write a new generation. New, modified, deleted and moved (same blob, new path)
files are reported like a sync.

This module holds the check: the stamps (:class:`Scan`, :class:`Stamps`), the manifest
(:func:`read_manifest`), :func:`is_fresh`, the racy files and the index lock. The update is
:mod:`ee.index.update`'s (:class:`~ee.index.update.Updater`); the generations it saves, and the ones
this process keeps open, :mod:`ee.index.generations`'.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import marshal
import os
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import ee.model
from ee.config import open_regular, read_settings_file
from ee.git.repo import holds_nothing
from ee.index.cache import CACHE_VERSION
from ee.index.segment import join_strings, no_gc, split_strings
from ee.store.files import EVENTS, INDEX_DIR, MANIFEST, MAX_BODY_BYTES, make_state_folder
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
Progress = ee.model.Progress  # (phase, done, total): "parse" / "embed" while (re)building


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


def differences(saved: Stamps, found: Scan) -> tuple[set[str], list[str]]:
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


def stamps_record(found: Scan, blobs: dict[str, Any], racy: list[str]) -> dict[str, Any]:
    """What ``stamps.marshal`` holds for ``found`` (bytes and small values only: it loads in microseconds)."""
    paths, stamps = found.key()
    blob_ids = join_strings([blobs.get(rel) or "" for rel in found.paths])
    return {"paths": paths, "stamps": stamps, "blobs": blob_ids, "events": found.events, "racy": racy}


def parse_stamps(value: Any) -> dict[str, Any]:
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
            manifest.update(parse_stamps(load_marshal(root / INDEX_DIR / manifest["generation"] / STAMPS)))
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


def body_limit(root: Path) -> int:
    """``store.max_body_bytes``, read now (a long-lived process sees a change): the size past which a
    memory file is skipped. The index records the limit it was read with, and catches up when it moves."""
    from ee.config import load_config
    from ee.errors import ConfigError

    try:
        return int(load_config(root).get("store.max_body_bytes"))
    except ConfigError:
        return MAX_BODY_BYTES  # a broken config is reported by `ee doctor`; the index keeps the default


def load_marshal(path: Path) -> Any:
    """One of our own marshal files, read with the garbage collector paused (it is half the cost of
    building 10k small dicts otherwise); not a dict → ValueError."""
    data = path.read_bytes()
    with no_gc():
        value = marshal.loads(data)  # noqa: S302 - our own file
    if not isinstance(value, dict):
        raise ValueError(f"{path} is damaged")
    return value
