"""Proof that the store did not change, so ``ee watch``'s server can answer from the view it holds.

Every query normally stats every memory file (:func:`ee.index.freshness.scan`): ~10 ms at 10k files, most of
a warm query. The watcher's own events cannot replace that: watchdog delivers them late (its move
grouper holds them ~0.5 s), so "no event seen yet" does not prove "nothing changed".

A raw inotify descriptor does. The kernel queues an event *while the write happens* (in the write,
rename, unlink or mkdir system call), so once a writer's call has returned, ``FIONREAD`` on the
descriptor is non-zero. :class:`Sentinel` holds one descriptor with a watch on every folder below
``memories/`` (hidden ones too: ``.events/`` holds the feedback files). :class:`Voucher` keeps the last
view ``open_index`` returned and hands it out again while

- the descriptor has nothing queued (no file below ``memories/`` was written, created, deleted, moved or
  had its attributes changed since the view was opened: the scan would find the same stamps),
- HEAD names what the view's manifest says (read as ``open_index`` reads it: two small files),
- the model key, ``.ee/config.toml`` and ``.ee/index/manifest.json`` are as they were (three stats).

Otherwise it drains the queue (re-arming from scratch after an overflow, a folder created, moved or
deleted, or anything unexpected), *then* runs the normal ``open_index`` (scan, incremental update) and
vouches for its result. Draining before the scan is what makes it race-free: a write that lands after
the drain is either seen by the scan or still queued for the next request.

Where inotify cannot prove anything, nothing is vouched and every query takes the normal path: a file
system other than a known local one (NFS, SMB, FUSE: another machine's writes raise no event), no
inotify (watch limit, another OS), a ``memories/`` that does not exist yet. ``memories/`` itself is
checked by identity on every request (a symlink re-pointed raises no event in the old folder). Not
covered: a memory file written through a hard link that lives outside ``memories/`` (the kernel reports
the write on the other path only) or through a shared memory map (no event): editors and git do
neither; ``ee watch`` assumes the store's files are written through their paths.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import ctypes.util
import errno
import fcntl
import os
import struct
import termios
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ee.store.files import MEMORIES, STATE_DIR

# <sys/inotify.h>
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

# Everything that changes what a scan of the folder would report (not open / read / close-nowrite).
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
# After one of these the set of watched folders may be wrong: arm again from scratch.
_STRUCTURAL = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

# statfs f_type of local file systems whose writes all pass through this kernel (so raise an event).
LOCAL_FILE_SYSTEMS = frozenset(
    {
        0xEF53,  # ext2/3/4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs
        0x2FC12FC1,  # zfs
        0xF2F52010,  # f2fs
        0x4D44,  # vfat
        0x5346544E,  # ntfs (ntfs3)
        0x2011BAB0,  # exfat
    }
)


class _Libc:
    """inotify and statfs from the C library, looked up once (None where this is not Linux)."""

    _lib: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls._lib is None:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            for name in ("inotify_init1", "inotify_add_watch", "statfs"):
                if not hasattr(lib, name):
                    cls._lib = False
                    return None
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            lib.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
            cls._lib = lib
        return cls._lib or None


def file_system_type(path: Path) -> int | None:
    """The ``statfs`` type number of the file system holding ``path`` (None when unknown)."""
    lib = _Libc.get()
    if lib is None:
        return None
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if lib.statfs(os.fsencode(path), buf) != 0:
        return None
    value: int = struct.unpack_from("l", buf.raw)[0]
    return value & 0xFFFFFFFF


class Sentinel:
    """An inotify descriptor watching every folder below ``memories/``: ``arm``, ``quiet``, ``drain``."""

    def __init__(self, root: Path) -> None:
        self.folder = root / MEMORIES
        self.fd: int | None = None
        self.watches = 0
        self.identity: tuple[int, int] | None = None  # (device, inode) of the memories/ folder watched

    def arm(self) -> bool:
        """Watch every folder from scratch (closing the old descriptor); False when that is impossible.

        A folder is watched *before* it is listed, so a sub-folder created meanwhile raises an event."""
        self.close()
        lib = _Libc.get()
        if lib is None or file_system_type(self.folder) not in LOCAL_FILE_SYSTEMS:
            return False
        try:
            st = os.stat(self.folder)
        except OSError:
            return False
        fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return False
        self.fd, self.watches, self.identity = fd, 0, (st.st_dev, st.st_ino)
        stack = [(os.fspath(self.folder), 0)]  # the top may be a symlink (scan follows it); the rest not
        while stack:
            folder, follow = stack.pop()
            if lib.inotify_add_watch(fd, os.fsencode(folder), MASK | follow) < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR) and self.watches:
                    continue  # gone meanwhile: its parent's queue says so
                self.close()
                return False
            self.watches += 1
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, IN_DONT_FOLLOW))
            except OSError:
                if not self.watches:
                    self.close()
                    return False
        return True

    def quiet(self) -> bool:
        """Armed, nothing queued since the last arm or drain, and ``memories/`` still the folder watched
        (a symlink pointed elsewhere raises no event in the old folder: the workspace root is not
        watched)."""
        if self.fd is None:
            return False
        try:
            pending = fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0")
            st = os.stat(self.folder)
        except OSError:
            return False
        return struct.unpack("i", pending)[0] == 0 and (st.st_dev, st.st_ino) == self.identity

    def drain(self) -> bool:
        """Read every queued event; False when one of them means the watches must be set up again."""
        if self.fd is None:
            return False
        try:
            st = os.stat(self.folder)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != self.identity:
            return False
        fine = True
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return fine
            except OSError:
                return False
            if not data:
                return fine
            offset = 0
            while offset + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _STRUCTURAL or mask & IN_ISDIR:  # (a folder made, moved, deleted: re-list)
                    fine = False

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd, self.watches, self.identity = None, 0, None


# Variables that move where git looks for the repository (a served write runs with the client's).
_GIT_PLACES = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    }
)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _reissued(view: Any, git: Any) -> Any:
    """The held view handed out once more: a shallow copy (the generation, state and loaded model are
    shared) with its own ``degraded`` list, no sync report (nothing was synced) and this request's git."""
    again = copy.copy(view)
    again.degraded = list(view.degraded)
    again.report = None
    again.git = git
    return again


class Voucher:
    """Installed as ``ee.index.view.VOUCHER`` by ``ee watch``: ``open(ws, open_fresh)`` returns the view it
    holds while :class:`Sentinel` proves it exact, else ``open_fresh()`` (which it then holds)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.sentinel = Sentinel(self.root)
        self.lock = threading.Lock()
        self.view: Any = None
        self.key: tuple[Any, ...] | None = None
        self.vouched = 0  # answers given without a scan (for tests and the log)
        self.opened = 0
        self._git: tuple[Path, Path, int] | None = None  # (top level, git folder, its inode)

    def open(self, ws: Any, open_fresh: Callable[[], Any]) -> Any:
        if ws.root.resolve() != self.root:
            return open_fresh()
        with self.lock:
            self._seed_git(ws.git)
            if self.view is not None and self.sentinel.quiet() and self._key(ws) == self.key:
                self.vouched += 1
                view = self.view
                return _reissued(view, ws.git)
            self.view = self.key = None
            armed = self.sentinel.drain() or self.sentinel.arm()
            view = open_fresh()  # scans after the drain: every later write is still queued
            self.opened += 1
            if armed and view.commit is None:
                self.view, self.key = view, self._key(ws, view.manifest)
            self._learn_git(ws.git)
            return view

    def _learn_git(self, git: Any) -> None:
        """Remember where the repository is when it is the plain ``.git`` folder of the workspace."""
        top, git_dir = getattr(git, "_toplevel", None), getattr(git, "_git_dir", None)
        if top is None or git_dir is None or Path(top) != self.root or Path(git_dir) != self.root / ".git":
            return
        with contextlib.suppress(OSError):
            st = os.lstat(git_dir)
            if os.path.isdir(git_dir) and not os.path.islink(git_dir):
                self._git = (Path(top), Path(git_dir), st.st_ino)

    def _seed_git(self, git: Any) -> None:
        """Tell a request's fresh ``Git`` where the repository is, as it would learn with ``git rev-parse``
        (a process: ~4 ms of every query). Only while ``.git`` is the same folder: git finds it first."""
        if self._git is None or getattr(git, "_git_dir", None) is not None or _GIT_PLACES & os.environ.keys():
            return
        top, git_dir, inode = self._git
        try:
            st = os.lstat(git_dir)
        except OSError:
            self._git = None
            return
        if st.st_ino != inode or not os.path.isdir(git_dir) or Path(git.workspace).resolve() != top:
            self._git = None
            return
        git._toplevel, git._git_dir = top, git_dir

    def forget(self) -> None:
        """Hand out no held view: the next request opens a fresh one. For what changes the answer without
        a file event (the transformer arm's vectors completed beside the generation by ``ee watch``)."""
        with self.lock:
            self.view = self.key = None

    def close(self) -> None:
        with self.lock:
            self.view = self.key = None
            self.sentinel.close()

    def _key(self, ws: Any, manifest: dict[str, Any] | None = None) -> tuple[Any, ...]:
        """What the view depends on besides the files: HEAD as ``open_index`` reads it, the model key,
        the config, and the manifest (another process rebuilding or pruning generations)."""
        from ee.index.view import model_folder

        _folder, model_key, _problem = model_folder(ws)
        head = ws.git.head_ref()
        moved = manifest is not None and (manifest.get("head"), manifest.get("model_id")) != (
            head,
            model_key or None,
        )
        if moved:
            return ("unvouched",)  # changed while it was opened: look again next time
        return (
            head,
            model_key,
            _stamp(self.root / STATE_DIR / "config.toml"),
            _stamp(self.root / STATE_DIR / "index" / "manifest.json"),
        )
