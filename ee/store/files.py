"""Memory files on disk: paths ↔ ids, reading, atomic writes and the workspace write lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ee._crash import crash_point
from ee.config import open_file, open_regular
from ee.errors import (
    ConflictError,
    LockTimeout,
    MemoryFormatError,
    NotFound,
    NotRegularFile,
    StorageError,
    UsageError,
)
from ee.git.repo import check_own_folder
from ee.model import Memory, Problem
from ee.store import frontmatter
from ee.store.ids import is_valid_id
from ee.store.walk import memory_files

if TYPE_CHECKING:
    from collections.abc import Iterator

MEMORIES = "memories"
TEMP_PREFIX = ".ee-tmp-"  # atomic-write temporaries (ee doctor --fix removes what a kill left)
EVENTS = "memories/.events"
STATE_DIR = ".ee"
# Where the derived index lives (ee.index owns what is in it): named here, beside the rest of the layout, so
# a light command (ee remember's near-duplicate check) can tell whether there is one without importing it.
INDEX_DIR = f"{STATE_DIR}/index"
MANIFEST = f"{INDEX_DIR}/manifest.json"
MAX_BODY_BYTES = 256 * 1024  # a larger file is reported and skipped; configurable in .ee/config.toml


class Snapshot:
    """Every memory readable in the working tree, and what is wrong with the rest."""

    __slots__ = ("memories", "problems")

    def __init__(
        self, memories: dict[str, Memory] | None = None, problems: list[Problem] | None = None
    ) -> None:
        self.memories: dict[str, Memory] = {} if memories is None else memories
        self.problems: list[Problem] = [] if problems is None else problems

    def sorted(self) -> list[Memory]:
        return sorted(self.memories.values(), key=lambda m: m.id)


class Store:
    """The ``memories/`` folder of a workspace."""

    def __init__(self, root: Path, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.root = root
        self.folder = root / MEMORIES
        self.max_body_bytes = max_body_bytes
        self._inside_cache: dict[Path, bool] = {}
        self._folder_resolved: Path | None = None
        # path → digest of the bytes last read (or the bytes themselves, after one write of a file): a
        # write or delete refuses a file that changed since (a person's save between ee's read and ee's
        # write would otherwise be lost).
        self._seen: dict[str, str | bytes] = {}

    # ------------------------------------------------------------------------------------ reading

    def files(self) -> list[tuple[str, os.stat_result]]:
        return sorted(memory_files(self.root))

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a memory file, refusing anything that leaves ``memories/`` or is too large."""
        path = self.safe_path(rel)
        if shown_path(rel) != rel:  # it could not be named in any JSON output (nor on most other systems)
            raise MemoryFormatError(
                "the file name is not UTF-8", shown_path(rel), hint="rename the file (its name as UTF-8 text)"
            )
        try:
            if path.is_symlink():
                target = Path(os.path.realpath(path))  # never raises: a link loop fails the open (ELOOP)
                if not self._inside(target.parent):
                    raise MemoryFormatError(
                        f"symlink points outside memories/ (to {target})",
                        rel,
                        hint=f"replace the link with a copy of the file, or delete it: rm {rel}",
                    )
            try:  # (a link inside memories/ is followed: checked above)
                fd, st = open_file(path, follow_links=True)
            except NotRegularFile as exc:
                if exc.strerror == "Is a directory":
                    raise MemoryFormatError(
                        "is a folder, not a file", rel, hint="rename the folder: its name ends in .md"
                    ) from None
                # A FIFO would block the read forever, a device would never end.
                raise MemoryFormatError(
                    "is not a regular file (a FIFO, socket or device)",
                    rel,
                    hint=f"move it out of memories/: rm {rel}",
                ) from None
            with os.fdopen(fd, "rb") as handle:
                size = st.st_size
                if size > self.max_body_bytes:
                    raise MemoryFormatError(
                        f"file is {size} bytes, more than the limit of {self.max_body_bytes}",
                        rel,
                        hint="split it into several memories, or raise store.max_body_bytes in "
                        ".ee/config.toml",
                    )
                data = handle.read()
                self._seen[rel] = file_digest(data)
                return data
        except FileNotFoundError:
            raise NotFound(f"no memory file {rel}", "run `ee memory list` to see the memories") from None
        except OSError as exc:  # a symlink loop, no permission, an I/O error
            raise MemoryFormatError(
                f"cannot be read: {exc.strerror or exc}", rel, hint=f"fix or remove {rel}, then run ee doctor"
            ) from None

    def parse_bytes(self, rel: str, data: bytes) -> tuple[Memory, list[Problem]]:
        return frontmatter.parse(frontmatter.decode(data, rel), rel)

    def read(self, rel: str) -> tuple[Memory, list[Problem]]:
        return self.parse_bytes(rel, self.read_bytes(rel))

    def snapshot(self) -> Snapshot:
        """Read every memory file; a broken file becomes a problem and never stops the rest."""
        snap = Snapshot()
        paths: dict[str, str] = {}
        for rel, _stat in self.files():
            try:
                memory, problems = self.read(rel)
            except (MemoryFormatError, NotFound) as exc:
                snap.problems.extend(problems_from_error(exc, rel))
                continue
            snap.problems.extend(problems)
            add_unique(snap, paths, memory)
        return snap

    def find_named(self, memory_id: str) -> Memory | None:
        """The memory with ``memory_id`` if it is in a file named as ee names them (cheap: one file read)."""
        check_id(memory_id)
        for rel, _ in self.files():
            if named_for(memory_id, rel):
                with contextlib.suppress(MemoryFormatError, NotFound):
                    memory, _p = self.read(rel)
                    if memory.id == memory_id:
                        return memory
        return None

    def find(self, memory_id: str) -> Memory:
        """The memory with ``memory_id``, looking first where ee names its files, then everywhere."""
        named = self.find_named(memory_id)
        if named is not None:
            return named
        snap = self.snapshot()
        memory_found = snap.memories.get(memory_id)
        if memory_found is None:
            broken = sum(1 for p in snap.problems if p.code == "memory_invalid")
            raise NotFound(f"no memory {memory_id}", missing_hint(broken))
        return memory_found

    # ------------------------------------------------------------------------------------ writing

    def new_path(self, memory_id: str, body: str) -> str:
        """``memories/<slug>-<last 8 of the id>.md``, the slug from the first words of the body."""
        words = re.findall(r"[a-z0-9]+", body.lower())[:6]
        slug = "-".join(words)[:48].strip("-") or "memory"
        return f"{MEMORIES}/{slug}-{memory_id[-8:].lower()}.md"

    def safe_path(self, rel: str) -> Path:
        """``rel`` as a path inside the workspace's memories folder, or a UsageError."""
        if "\x00" in rel or rel.startswith("/") or ".." in Path(rel).parts:
            raise UsageError(f"path {rel!r} leaves memories/", "use a path below memories/")
        path = self.root / rel
        if not self._inside(path.parent):
            raise UsageError(f"path {rel!r} is not below memories/", "use a path below memories/")
        return path

    def _inside(self, folder: Path) -> bool:
        """Is ``folder`` (symlinks resolved) memories/ or below it? Remembered per folder: a snapshot of
        10,000 files asks about a handful of folders, and resolving costs a system call per component."""
        known = self._inside_cache.get(folder)
        if known is None:
            if self._folder_resolved is None:
                check_own_folder(self.root)  # (a write must not land outside the workspace either)
                self._folder_resolved = _resolved(self.folder)
            known = self._inside_cache[folder] = _resolved(folder).is_relative_to(self._folder_resolved)
        return known

    def write(self, rel: str, text: str, *, durable: bool = True) -> None:
        """Write a memory file atomically; ``durable=False`` leaves the fsync to :func:`flush_to_disk`."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8 where the text came from
            raise UsageError(
                f"the memory for {rel} holds text that is not UTF-8", "convert it first (e.g. with iconv)"
            ) from None
        if len(data) > self.max_body_bytes:
            # Written, it could never be read back (read_bytes skips files over the cap).
            raise UsageError(
                f"the memory would be {len(data)} bytes, more than the limit of {self.max_body_bytes}",
                "split it into several memories, or raise store.max_body_bytes in .ee/config.toml",
            )
        atomic_write(self.safe_path(rel), data, durable=durable, expected=self._seen.get(rel))
        # One write (a remember): its bytes, to compare with (no hash module to load for it); a batch of
        # them (an import): their digests, not a copy of every file.
        self._seen[rel] = data if durable else file_digest(data)

    def delete(self, rel: str) -> None:
        path = self.safe_path(rel)
        refuse_changed(path, self._seen.pop(rel, None))
        path.unlink()


def missing_hint(broken: int) -> str:
    """The repair of a memory id not found (``ee memory show``, ``ee why``): where to find its id, and,
    when ``broken`` files could not be read, that the memory may be in one of them."""
    hint = "run `ee memory list` or `ee search` to find its id"
    if broken:
        hint += f"; {broken} memory file(s) could not be read: `ee doctor` names them"
    return hint


def named_for(memory_id: str, rel: str) -> bool:
    """Is ``rel`` named as ee names the file of ``memory_id`` (``…-<last 8 of the id>.md``, ``<id>.md``)?"""
    return rel.endswith((f"-{memory_id[-8:].lower()}.md", f"/{memory_id}.md"))


def keep_order(memory_id: str, rel: str) -> tuple[bool, str]:
    """Of several files with one id, the store and the index keep the one that sorts first by this key:
    the first named as ee names that id's file (where ``ee memory show`` looks first), else the first."""
    return not named_for(memory_id, rel), rel


def add_unique(snap: Snapshot, paths: dict[str, str], memory: Memory) -> None:
    """Add ``memory`` unless its id is taken by a file :func:`keep_order` puts first; the other file is
    reported."""
    first = paths.get(memory.id)
    if first is not None:
        skipped = memory
        if keep_order(memory.id, memory.path) < keep_order(memory.id, first):
            skipped, first = snap.memories[memory.id], memory.path
            paths[memory.id] = memory.path
            snap.memories[memory.id] = memory
        snap.problems.append(
            Problem(
                code="duplicate_id",
                severity="error",
                message=f"id {skipped.id} is also used by {first}; this file is skipped",
                path=skipped.path,
                line=2 if skipped.has_frontmatter else None,
                key="id",
                repair=f"give one of the files a new id: edit the 'id:' line of {skipped.path} "
                "(or delete it)",
            )
        )
        return
    paths[memory.id] = memory.path
    snap.memories[memory.id] = memory


def shown_path(rel: str) -> str:
    """``rel`` as text that can be printed and put in JSON: a file name that is not UTF-8 (its bytes are
    surrogate-escaped by the OS layer) shows U+FFFD for each bad byte."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def problems_from_error(exc: MemoryFormatError | NotFound, rel: str) -> list[Problem]:
    """One problem per thing wrong in the file (a file can have several: each names its line)."""
    if isinstance(exc, MemoryFormatError):
        return [problem_from_error(each, rel) for each in exc.each()]
    return [problem_from_error(exc, rel)]


def problem_from_error(exc: MemoryFormatError | NotFound, rel: str) -> Problem:
    rel = shown_path(rel)
    if isinstance(exc, MemoryFormatError):
        return Problem(
            code="memory_invalid",
            severity="error",
            message=exc.reason,
            path=rel,
            line=exc.line,
            key=exc.key,
            repair=exc.hint or f"fix {rel}, then run `ee doctor`",
        )
    return Problem(code="memory_missing", severity="error", message=exc.message, path=rel, repair=exc.hint)


def check_id(memory_id: str) -> None:
    if not is_valid_id(memory_id):
        raise UsageError(
            f"{memory_id!r} is not a memory id",
            "ids look like mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB; find them with `ee memory list`",
        )


def atomic_write(
    path: Path, data: bytes, *, durable: bool = True, expected: str | bytes | None = None
) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part.

    ``expected`` (the :func:`file_digest` of what the caller read): refuse to replace a file that changed
    since, checked just before the rename (ConflictError).

    ``durable`` syncs the file and its folder before returning. A bulk writer passes False for each file
    and calls :func:`flush_to_disk` once at the end: 10,000 fsync pairs cost ~10 s, one sync a fraction.
    """
    _make_folder(path.parent)
    fd, tmp = _temporary_file(path.parent)
    try:
        # mkstemp makes the file 0600: give it the mode the file had, or what the umask allows a new file.
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        crash_point("write.temp")
        refuse_changed(path, expected)
        os.replace(tmp, path)
        crash_point("write.renamed")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def refuse_changed(path: Path, expected: str | bytes | None) -> None:
    """ConflictError when ``path`` no longer holds the content ``expected`` (the bytes, or their
    :func:`file_digest`; None: no check)."""
    if expected is None:
        return
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = None
    current = data if data is None or isinstance(expected, bytes) else file_digest(data)
    if current != expected:
        raise ConflictError(
            f"{path} changed while ee was editing it; nothing was written",
            "look at the file (a person or another tool saved it), commit or undo that change, and run the "
            "command again",
        )


def flush_to_disk() -> None:
    """Make every write so far durable (after a batch of ``durable=False`` writes)."""
    os.sync()


def _umask() -> int:
    # Reading the umask means setting it; set it straight back (ee writes from one thread).
    current = os.umask(0o022)
    os.umask(current)
    return current


def _make_folder(folder: Path) -> None:
    """Create ``folder`` and its parents; a path on the way that is not a folder (a dangling symlink, a
    file, a FIFO where ``memories/`` should be) is a StorageError naming it, not a traceback."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        odd = next(
            (p for p in (folder, *folder.parents) if p.is_symlink() or (p.exists() and not p.is_dir())),
            folder,
        )
        kind = "a dangling symlink" if odd.is_symlink() and not odd.exists() else "not a folder"
        raise StorageError(
            f"{odd} is {kind}, so ee cannot write {folder}",
            f"move {odd} aside (or point the symlink at an existing folder), then run the command again",
        ) from None


def _resolved(path: Path) -> Path:
    """``path`` with its symlinks resolved; a symlink loop on the way (``memories -> memories``) is a
    StorageError naming it, not a traceback."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # (RuntimeError: pathlib's word for a loop before Python 3.13)
        odd = next((p for p in reversed((path, *path.parents)) if _loops(p)), path)
        raise StorageError(
            f"{odd} is a symlink loop, so ee cannot write {path}",
            f"move {odd} aside (or point the symlink at an existing folder), then run the command again",
        ) from None


def _loops(path: Path) -> bool:
    try:
        path.resolve()
    except (RuntimeError, OSError):
        return True
    return False


def _temporary_file(folder: Path) -> tuple[int, str]:
    """A new, uniquely named file in ``folder`` (what ``tempfile.mkstemp`` does, without its ~5 ms import).

    O_EXCL with 96 random bits: two writers, even two machines on a shared folder, never collide. Opened by
    :func:`ee.config.open_regular`: under ``.ee/``, a folder on the way that is a link is refused.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    while True:
        name = os.path.join(folder, f"{TEMP_PREFIX}{os.urandom(12).hex()}")
        try:
            return open_regular(name, flags, 0o600), name
        except FileExistsError:  # pragma: no cover - 2**-96
            continue


def file_digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def make_state_folder(folder: Path) -> None:
    """Make ``folder``, a folder right under a workspace's ``.ee/`` (``.ee/index``, ``.ee/cache``), and
    ``.ee/`` itself when missing, but never the workspace folder: a long-lived process (ee watch) whose
    workspace was just moved or deleted must not make it again (it would never see it gone). Raises
    FileNotFoundError when the workspace folder is gone; a StorageError when ``folder`` is a link or not this
    user's (:func:`ee.config.state_folder`: ee fills it by name, never through a link)."""
    from ee.config import state_folder

    try:
        state_folder(folder)
    except NotRegularFile as exc:
        raise StorageError(
            f"ee keeps derived data in {folder}, but {exc.filename}: {exc.strerror}",
            f"remove it (rm -r {folder}, or the link on the way): ee makes it again",
        ) from None


@contextlib.contextmanager
def workspace_lock(root: Path, timeout: float = 30.0) -> Iterator[None]:
    """The workspace write lock: one writer at a time, waiting up to ``timeout`` seconds.

    An ``flock`` on ``.ee/lock``: the kernel releases it when its owner dies, so a lock left by a
    killed process is never stale. The owner's pid is written for ``ee doctor``.
    """
    path = root / STATE_DIR / "lock"
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    except NotRegularFile as exc:  # a link (never followed), a FIFO, a folder, another user's file
        raise StorageError(
            f"cannot open the workspace lock {path}: {exc.strerror or exc}",
            f"remove it (rm {path}: ee makes a new one), then run the command again",
        ) from None
    deadline = time.monotonic() + timeout
    delay = 0.002
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise StorageError(
                        f"cannot lock {path}: {exc}", "check that .ee/ is on a local, writable file system"
                    ) from None
                if time.monotonic() >= deadline:
                    holder = _lock_holder(path)
                    raise LockTimeout(
                        f"another ee process{holder} holds the workspace lock; waited {timeout:.0f} s",
                        "try again in a moment (or raise EE_LOCK_TIMEOUT)",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _lock_holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        return f" (pid {_read_pid(path)})"
    return ""


def _read_pid(path: Path) -> int:
    with open(open_regular(path, os.O_RDONLY), "rb") as handle:
        return int(handle.read(32).decode().strip())


def lock_is_held(root: Path) -> int | None:
    """The pid holding the workspace lock, or None (for `ee doctor`)."""
    path = root / STATE_DIR / "lock"
    try:
        fd = open_regular(path, os.O_RDWR)
    except OSError:  # none (or not one ee could have taken: a link, a FIFO)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            return _read_pid(path)
        return -1
    finally:
        os.close(fd)
    return None
