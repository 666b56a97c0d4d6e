"""Git objects written in-process: the blobs and trees of a small commit, without ``update-index`` and
``write-tree``.

A commit of one memory in a 10,000-file store spent ~20 ms in those two git processes, most of it
reading and rewriting the index and the ~300 KB ``memories/`` tree. Here the trees along the changed
paths are edited as bytes (git's tree format: ``<mode> <name>\\0<20-byte id>`` entries sorted by name,
a folder's name compared as if it ended in ``/``) and written as loose objects, as git writes them.

Exactness first: :func:`plan` returns None (the caller then asks git) for anything it does not follow
exactly: a git variable that moves the repository or its configuration, a config or attributes file
that could change how git reads a file (``include``, ``filter``, ``working-tree-encoding``, ``safecrlf``,
a shared repository, another object format, alternates), content git would convert (a CR, ``$Id``), a
path that is not a plain regular file or a plain name, or a tree entry of an unusual kind. The parent
trees come from the trees this process committed last (in memory), else from a small cache of the trees
ee wrote last (``.git/ee/trees.cache``, each checked against its id), else from ``git cat-file``; the big
tree is compressed piece by piece, reusing the pieces its parent shared (:func:`_deflate`). The commit
object's identity and date: :mod:`ee.gitident`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ee.digests import sha1
from ee.errors import EeError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
TREE_CACHE = "trees.cache"  # in .git/ee/: the trees of ee's last commit, to start the next one from
MAX_PATHS = 50  # more paths than this: git's own path (a bulk import packs its blobs)
TREE_MODE = b"40000"
_CUT = re.compile(rb"\x00\x00")  # where _deflate cuts its pieces
# A tree entry of a kind git's index holds as it is (a blob, an executable, a symlink, a folder, a
# submodule): a tree with any other mode does not parse (see _entries), and git builds the commit.
_ENTRY = re.compile(rb"(?:100644|100755|120000|40000|160000) [^\0]+\0.{20}", re.S)
_NAME = re.compile(r"[A-Za-z0-9._@+-]+")
# Variables that move the repository, its index, objects or configuration, or change how git reads
# attributes: with any of them set, git builds the commit. (The rest, GIT_AUTHOR_* included, concern only
# the git processes that still run, or nothing here.)
_MOVING_ENV = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_QUARANTINE_PATH",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_ATTR_SOURCE",
    }
)
# Words in a config file (lower case, blanks removed) after which git might read or store a file
# differently from the plain reading here.
_CONFIG_WORDS = (
    b"include",
    b"safecrlf",
    b"attributesfile",
    b"sharedrepository",
    b"extensions",
    b"objectformat",
    b"precomposeunicode=true",
    b"ignorecase=true",
    b"worktree",
    b"fsync",  # git told to sync objects: the plain writer here does not
    b"compression",  # another zlib level than git's default for loose objects
)
_ATTRIBUTE_WORDS = (b"filter", b"encoding")
_Fetch = Callable[[Iterable[str]], Mapping[str, bytes]]  # tree ids → raw trees (missing ones left out)


class Plan:
    """The objects of a commit, computed but not yet written: ``tree`` is the new root tree's id."""

    __slots__ = ("blobs", "entries", "known", "tree", "trees")

    def __init__(
        self,
        tree: str,
        blobs: dict[str, bytes] | None = None,
        trees: dict[str, bytes] | None = None,
        entries: dict[str, list[bytes]] | None = None,
        known: dict[bytes, bytes] | None = None,
    ) -> None:
        self.tree = tree
        self.blobs: dict[str, bytes] = {} if blobs is None else blobs  # id → content
        self.trees: dict[str, bytes] = {} if trees is None else trees  # id → raw tree, the edited ones
        # id → the edited trees' entries
        self.entries: dict[str, list[bytes]] = {} if entries is None else entries
        # pieces of the parent trees, compressed
        self.known: dict[bytes, bytes] = {} if known is None else known


def plan(
    toplevel: Path, git_dir: Path, parent_tree: str, repo_paths: list[str], fetch: _Fetch
) -> Plan | None:
    """The objects a commit of ``repo_paths`` (their working-tree state; missing → deleted) on top of
    ``parent_tree`` needs, or None when git must build it. ``fetch`` reads trees git holds (ids → raw)."""
    if not repo_paths or len(repo_paths) > MAX_PATHS or not _plain_environment():
        return None
    if not _plain_config(git_dir) or os.path.exists(git_dir / "objects" / "info" / "alternates"):
        return None
    changes: dict[str, tuple[bytes, str] | None] = {}
    blobs: dict[str, bytes] = {}
    folders: set[str] = set()
    for path in repo_paths:
        parts = path.split("/")
        if not all(_plain_name(part) for part in parts):
            return None
        folders.update("/".join(parts[:n]) for n in range(len(parts)))
        if not _real_folders(toplevel, parts[:-1]):
            return None
        try:
            info = os.lstat(toplevel / path)
        except FileNotFoundError:
            changes[path] = None
            continue
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o111:
            return None  # a symlink, an executable, a folder: git's rules for those stay git's
        try:
            data = (toplevel / path).read_bytes()
        except OSError:
            return None
        if b"\r" in data or b"$Id" in data:
            return None  # git's end-of-line or ident conversion could change it
        sha = object_id(b"blob", data)
        blobs[sha] = data
        changes[path] = (b"100644", sha)
    if not _plain_attributes(toplevel, git_dir, folders):
        return None
    editor = _Editor(git_dir, fetch)
    try:
        tree = editor.edit(parent_tree, "", changes)
    except _Unusual:
        return None
    tree = tree or editor.put(b"")
    return Plan(
        tree=tree, blobs=blobs, trees=editor.written, entries=editor.entries_written, known=editor.known
    )


def write(
    git_dir: Path, objects: Mapping[str, bytes], kind: bytes, known: dict[bytes, bytes] | None = None
) -> dict[str, list[tuple[bytes, bytes]]]:
    """Store ``objects`` (id → content) as loose objects of ``kind``, as git does: zlib at git's default
    loose level (1), a read-only file renamed into ``objects/xx/``; an object already there is kept.

    ``known`` (pieces of earlier trees → their compressed form): see :func:`_deflate`. Returns each
    object's pieces (raw, compressed), for the next commit's ``known``."""
    pieces: dict[str, list[tuple[bytes, bytes]]] = {}
    for sha, data in objects.items():
        folder = git_dir / "objects" / sha[:2]
        final = folder / sha[2:]
        full = b"%s %d\x00" % (kind, len(data)) + data
        if known is None:
            packed = zlib.compress(full, 1)
        else:
            packed, pieces[sha] = _deflate(full, known)
        if final.exists():
            continue
        tmp = folder / f"tmp_obj_ee{os.getpid()}_{os.urandom(4).hex()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        except FileNotFoundError:  # a new fan-out folder (or one a gc just removed as empty)
            folder.mkdir(exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(packed)
            with contextlib.suppress(FileExistsError):  # another writer stored the same object meanwhile
                os.link(tmp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return pieces


def _deflate(full: bytes, known: Mapping[bytes, bytes]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """``full`` as a zlib stream (level 1), compressed piece by piece so that the pieces an earlier tree
    shared are not compressed again: a commit changes one entry of a ~300 KB tree, and compressing all of
    it cost ~5 ms. Returns the stream and its pieces (raw, compressed).

    Pieces end where the content has two zero bytes (a boundary set by the bytes around it, so an
    inserted entry changes only its own piece); each is raw deflate ending in a full flush (byte-aligned,
    no reference to earlier bytes), so any sequence of them, an empty final block and the Adler-32 sum
    form a valid stream. Each newly compressed piece is inflated again and compared; a known one was,
    when it was new (the tree cache keeps them under a digest, see :func:`remember_trees`)."""
    pairs = []
    for piece in _pieces(full):
        done = known.get(piece)
        if done is None:
            packer = zlib.compressobj(1, zlib.DEFLATED, -15)
            done = packer.compress(piece) + packer.flush(zlib.Z_FULL_FLUSH)
            if zlib.decompressobj(-15).decompress(done) != piece:
                return zlib.compress(full, 1), []
        pairs.append((piece, done))
    header = b"\x78\x01"  # zlib's header for a 32 KB window at level 1
    end = b"\x03\x00" + zlib.adler32(full).to_bytes(4, "big")  # the final, empty block; the sum
    return header + b"".join(done for _piece, done in pairs) + end, pairs


def _cache_digest(tree: str, raw: bytes, compressed: list[bytes]) -> str:
    """What binds a cached tree's bytes and compressed pieces to its id, so that a damaged cache is not
    used: CRC-32 and Adler-32 (zlib's own checks, 64 bits together) over the id, the tree and each piece
    with its length. The file is ee's, written whole and renamed into place: this guards against damage
    to it (a bit flipped, a block lost), at ~0.2 ms where SHA-1 of the ~300 KB tree costs ~1.6."""
    crc, adler = 0, 1
    for part in (tree.encode(), b"%d\n" % len(raw), raw):
        crc, adler = zlib.crc32(part, crc), zlib.adler32(part, adler)
    for piece in compressed:
        for part in (b"%d\n" % len(piece), piece):
            crc, adler = zlib.crc32(part, crc), zlib.adler32(part, adler)
    return f"z-{crc:08x}{adler:08x}"


def _known_pieces(raw_tree: bytes, compressed: list[bytes]) -> dict[bytes, bytes]:
    """A cached tree's pieces (as :func:`_deflate` cut them) → their compressed form."""
    pieces = _pieces(b"tree %d\x00" % len(raw_tree) + raw_tree)
    return dict(zip(pieces, compressed, strict=True)) if len(pieces) == len(compressed) else {}


def _pieces(full: bytes) -> list[bytes]:
    cuts = [0, *(m.end() for m in _CUT.finditer(full)), len(full)]
    return [full[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def object_id(kind: bytes, data: bytes) -> str:
    digest = sha1()(b"%s %d\x00" % (kind, len(data)))  # (see ee.digests)
    digest.update(data)
    return digest.hexdigest()


def remember_trees(git_dir: Path, plan: Plan, pieces: Mapping[str, list[tuple[bytes, bytes]]]) -> None:
    """Keep the trees ``plan`` wrote and their compressed pieces for the next commit to start from: in
    this process (``ee watch`` commits one remember after another) and in ``.git/ee/trees.cache``."""
    _LAST_TREES.clear()
    _LAST_TREES.update(plan.entries)
    _LAST_PIECES.clear()
    for pairs in pieces.values():
        _LAST_PIECES.update(pairs)
    path = git_dir / "ee" / TREE_CACHE
    tmp = path.with_name(f"{TREE_CACHE}.{os.getpid()}.tmp")
    for left in path.parent.glob(f"{TREE_CACHE}.*.tmp"):  # a killed writer's
        with contextlib.suppress(OSError):
            left.unlink()
    try:
        with open(tmp, "wb") as handle:
            for sha, raw in plan.trees.items():
                compressed = [done for _piece, done in pieces.get(sha, [])]
                digest = _cache_digest(sha, raw, compressed)
                handle.write(b"%s %d %d %s\n" % (sha.encode(), len(raw), len(compressed), digest.encode()))
                handle.write(raw)
                for piece in compressed:
                    handle.write(b"%d\n" % len(piece))
                    handle.write(piece)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


# The trees of the last commit this process made (id → entries) and their pieces (raw → compressed):
# the next commit in the same process starts from them instead of the cache file. Both are keyed by
# content, so they hold for any repository.
_LAST_TREES: dict[str, list[bytes]] = {}
_LAST_PIECES: dict[bytes, bytes] = {}


class _Unusual(Exception):
    """Something this module does not build exactly as git would: ask git."""


class _Editor:
    """Edits trees along the changed paths; ``written`` collects the new trees (id → raw)."""

    def __init__(self, git_dir: Path, fetch: _Fetch) -> None:
        self.git_dir = git_dir
        self.fetch = fetch
        self.written: dict[str, bytes] = {}
        self.entries_written: dict[str, list[bytes]] = {}
        self.known: dict[bytes, bytes] = {}  # pieces of the trees read → compressed (see _deflate)
        self._cache: dict[str, tuple[bytes, list[bytes], str]] | None = None

    def edit(
        self, tree: str | None, prefix: str, changes: Mapping[str, tuple[bytes, str] | None]
    ) -> str | None:
        """The id of ``tree`` (None: a new folder) with ``changes`` (paths relative to it), None if empty."""
        entries = self.entries(tree) if tree else []
        here: dict[str, tuple[bytes, str] | None] = {}
        below: dict[str, dict[str, tuple[bytes, str] | None]] = {}
        for path, change in changes.items():
            name, sep, rest = path.partition("/")
            if sep:
                below.setdefault(name, {})[rest] = change
            else:
                here[name] = change
        for name, sub in below.items():
            if name in here:
                raise _Unusual  # a path and a path below it in one commit
            pos, found = _find(entries, name.encode())
            old = None
            if found:
                mode, old = _mode_and_id(entries[pos])
                if mode != TREE_MODE:
                    raise _Unusual  # a file where a folder is wanted
            new = self.edit(old, prefix + name + "/", sub)
            self._set(entries, name.encode(), None if new is None else (TREE_MODE, new))
        for name, change in here.items():
            pos, found = _find(entries, name.encode())
            if found and _mode_and_id(entries[pos])[0] not in (b"100644",):
                raise _Unusual  # a folder, a symlink, an executable or a submodule becomes a file
            self._set(entries, name.encode(), change)
        if not entries:
            return None
        raw = b"".join(entries)
        if _EMPTY_TREE_RAW in raw:
            raise _Unusual  # (likely) an empty folder in the tree: git's index would drop it
        return self.put(raw, entries)

    def put(self, raw: bytes, entries: list[bytes] | None = None) -> str:
        sha = object_id(b"tree", raw)
        self.written[sha] = raw
        self.entries_written[sha] = entries if entries is not None else _entries(raw)
        return sha

    def entries(self, tree: str) -> list[bytes]:
        """``tree``'s entries (a list of the caller's own), from this process's last commit if it wrote
        that tree, else read."""
        kept = _LAST_TREES.get(tree)
        if kept is not None:
            self.known.update(_LAST_PIECES)
            return list(kept)
        return _entries(self.read(tree))

    def read(self, tree: str) -> bytes:
        if self._cache is None:
            self._cache = _read_cache(self.git_dir / "ee" / TREE_CACHE)
        raw, compressed, digest = self._cache.get(tree, (None, [], ""))
        if raw is not None and _cache_digest(tree, raw, compressed) == digest:
            self.known.update(_known_pieces(raw, compressed))
        else:
            try:
                raw = self.fetch([tree]).get(tree)
            except EeError:
                raise _Unusual from None  # git's own path will say what is wrong
            if raw is None or object_id(b"tree", raw) != tree:
                raise _Unusual
        return raw

    @staticmethod
    def _set(entries: list[bytes], name: bytes, change: tuple[bytes, str] | None) -> None:
        key = name + b"/" if change is not None and change[0] == TREE_MODE else name
        pos, found = _find(entries, name)
        if found:
            del entries[pos]
        if change is None:
            return
        pos = bisect_left(entries, key, key=_sort_key)
        entries.insert(pos, change[0] + b" " + name + b"\x00" + bytes.fromhex(change[1]))


_EMPTY_TREE_RAW = bytes.fromhex(EMPTY_TREE)


def _entries(raw: bytes) -> list[bytes]:
    """A tree's entries, each as its bytes (checked: together they are the whole tree)."""
    entries = _ENTRY.findall(raw)
    if sum(map(len, entries)) != len(raw):
        raise _Unusual
    return entries


def _sort_key(entry: bytes) -> bytes:
    space = entry.index(b" ")
    name = entry[space + 1 : entry.index(b"\x00", space)]
    return name + b"/" if entry[:space] == TREE_MODE else name


def _find(entries: list[bytes], name: bytes) -> tuple[int, bool]:
    """Where ``name`` is among ``entries`` (as a file or as a folder): (position, found)."""
    for key in (name, name + b"/"):
        pos = bisect_left(entries, key, key=_sort_key)
        if pos < len(entries) and _sort_key(entries[pos]) == key:
            return pos, True
    return -1, False


def _mode_and_id(entry: bytes) -> tuple[bytes, str]:
    return entry[: entry.index(b" ")], entry[-20:].hex()


def _read_cache(path: Path) -> dict[str, tuple[bytes, list[bytes], str]]:
    """The cached trees: id → (raw tree, compressed pieces, their digest); each is checked by its
    reader."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    trees: dict[str, tuple[bytes, list[bytes], str]] = {}
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        header = data[pos:end].split() if end > 0 else []
        if len(header) != 4 or not header[1].isdigit() or not header[2].isdigit():
            break  # damaged: what was read so far is still checked against its ids
        size = int(header[1])
        raw = data[end + 1 : end + 1 + size]
        pos = end + 1 + size
        compressed = []
        for _ in range(int(header[2])):
            end = data.find(b"\n", pos)
            if end < 0 or not data[pos:end].isdigit():
                return trees
            length = int(data[pos:end])
            compressed.append(data[end + 1 : end + 1 + length])
            pos = end + 1 + length
        trees[header[0].decode("ascii", "replace")] = (raw, compressed, header[3].decode("ascii", "replace"))
    return trees


def _real_folders(toplevel: Path, parts: list[str]) -> bool:
    """Is each of the folders ``parts`` names (one below the other) a real folder or missing, never a
    symlink or a file? (git refuses a path beyond a symlink; a missing folder holds deleted files.)"""
    for n in range(1, len(parts) + 1):
        try:
            info = os.lstat(toplevel.joinpath(*parts[:n]))
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    return True


def _plain_name(part: str) -> bool:
    """A path component git takes as it is everywhere (``.git``-like names have rules of their own)."""
    return bool(_NAME.fullmatch(part)) and part not in (".", "..") and not part.lower().startswith(".git")


def _plain_environment() -> bool:
    return not _MOVING_ENV & os.environ.keys()


def config_files(git_dir: Path) -> tuple[list[Path], list[Path]]:
    """(the files git may read as its system configuration, the global and repository files in the order
    git reads them: a later one wins). The system file's place is compiled into git: every likely one is
    named, which is harmless for checks (each file can only say no)."""
    home = Path(os.environ.get("HOME", "/nonexistent"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    system = [Path("/etc/gitconfig"), _git_prefix() / "etc" / "gitconfig"]
    if "GIT_CONFIG_SYSTEM" in os.environ:
        system.append(Path(os.environ["GIT_CONFIG_SYSTEM"]))
    if "GIT_CONFIG_GLOBAL" in os.environ:
        personal = [Path(os.environ["GIT_CONFIG_GLOBAL"])]
    else:
        personal = [xdg / "git" / "config", home / ".gitconfig"]
    return system, [*personal, git_dir / "config"]


def _git_prefix() -> Path:
    """The installation prefix of the ``git`` on the PATH (``/usr`` for ``/usr/bin/git``)."""
    global _PREFIX
    if _PREFIX is None:
        _PREFIX = Path("/usr")
        for folder in os.environ.get("PATH", "").split(os.pathsep):  # (shutil.which costs an import)
            found = os.path.join(folder or ".", "git")
            if os.path.isfile(found) and os.access(found, os.X_OK):
                _PREFIX = Path(os.path.realpath(found)).parent.parent
                break
    return _PREFIX


_PREFIX: Path | None = None


def _plain_config(git_dir: Path) -> bool:
    system, personal = config_files(git_dir)
    return all(_free_of(path, _CONFIG_WORDS) for path in [*system, *personal])


def _plain_attributes(toplevel: Path, git_dir: Path, folders: Iterable[str]) -> bool:
    """No attributes file that applies could name a filter or a working-tree encoding."""
    home = Path(os.environ.get("HOME", "/nonexistent"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [git_dir / "info" / "attributes", xdg / "git" / "attributes", Path("/etc/gitattributes")]
    files += [_git_prefix() / "etc" / "gitattributes"]
    files += [toplevel / folder / ".gitattributes" for folder in folders]
    return all(_free_of(path, _ATTRIBUTE_WORDS) for path in files)


def _free_of(path: Path, words: tuple[bytes, ...]) -> bool:
    """True when ``path`` is missing or holds none of ``words`` (case and blanks ignored)."""
    try:
        text = path.read_bytes().lower().replace(b" ", b"").replace(b"\t", b"")
    except (FileNotFoundError, NotADirectoryError):
        return True  # git finds no file there either
    except OSError:
        return False
    return not any(word in text for word in words)
