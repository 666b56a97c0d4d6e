"""Memories that cite code, and whether the code they cite changed since.

A citation is a ``paths:`` entry naming one file (``src/app.py``) or a line range of one
(``src/app.py:10-20``, ``src/app.py:L10-L20``); a glob (``src/*.py``) is a scope, not a citation. When a
memory is written or reviewed, ee records the hash of each cited text in its frontmatter
(``cites: ["src/app.py:10-20 3f2a9c1b7d4e"]``, so clones share it); a pack checks it again just in time
(:func:`changed`) and marks a memory whose code changed.

Reading never follows a link out of the repository: a cited path that leaves it (``..``, absolute, or a
symlink whose target is outside) counts as missing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from typing import TYPE_CHECKING

from ee.store.frontmatter import CITES_KEY

if TYPE_CHECKING:
    from pathlib import Path

    from ee.model import Memory

GLOB_CHARS = frozenset("*?[{")
_RANGE_RE = re.compile(r"^(?P<path>.+?):L?(?P<start>\d{1,7})(?:-L?(?P<end>\d{1,7}))?$")
MAX_CITED_BYTES = 4 * 1024 * 1024  # a larger file is not hashed (a build artefact, not code one cites)
_HASH_CHARS = 12


def is_scope(entry: str) -> bool:
    return any(c in GLOB_CHARS for c in entry) or entry.endswith("/")


def split_cite(entry: str) -> tuple[str, int | None, int | None]:
    """(file, first line, last line) of a citation; lines None for a whole file."""
    match = _RANGE_RE.match(entry)
    if not match:
        return entry, None, None
    start = int(match.group("start"))
    end = int(match.group("end") or start)
    return match.group("path"), min(start, end), max(start, end)


def citations(memory: Memory) -> list[str]:
    """The memory's ``paths:`` entries that cite one file (or lines of one), in order."""
    return [entry for entry in memory.paths if entry.strip() and not is_scope(entry)]


def cited_file(root: Path, entry: str) -> Path | None:
    """The file a citation names, inside the repository, or None (missing, a folder, or outside it)."""
    name, _, _ = split_cite(entry)
    if name.startswith("/") or "\0" in name or ".." in name.split("/"):
        return None
    path = root / name
    real = os.path.realpath(path)  # (every link on the way resolved: one leading out is refused below)
    inside = _real_folder(str(root))
    if not real.startswith(inside + os.sep):
        return None
    return path if os.path.isfile(real) else None


@functools.lru_cache(maxsize=64)
def _real_folder(root: str) -> str:
    return os.path.realpath(root)


def cite_hash(root: Path, entry: str) -> str | None:
    """The hash of the cited text (lines with trailing blanks dropped), or None when it cannot be read."""
    path = cited_file(root, entry)
    if path is None:
        return None
    _, start, end = split_cite(entry)
    try:
        info = path.stat()
    except OSError:
        return None
    if info.st_size > MAX_CITED_BYTES:
        return None
    return _file_hash(str(path), info.st_mtime_ns, info.st_size, info.st_ino, start, end)


@functools.lru_cache(maxsize=4096)
def _file_hash(
    path: str, mtime_ns: int, size: int, inode: int, start: int | None, end: int | None
) -> str | None:
    """:func:`text_hash` of a file's lines, remembered while the file is unchanged (same modification time,
    size and inode): a warm server checks a pack's citations with a ``stat`` each, not a read."""
    try:
        with open(path, "rb") as handle:  # (cited_file checked the resolved path stays in the repo)
            data = handle.read()
    except OSError:
        return None
    return text_hash(data, start, end)


def text_hash(data: bytes, start: int | None, end: int | None) -> str | None:
    """The hash of lines ``start``..``end`` of ``data`` (all of it for None), trailing blanks dropped."""
    lines = data.decode("utf-8", "replace").splitlines()
    if start is not None and end is not None:
        if start > len(lines):
            return None
        lines = lines[start - 1 : end]
    text = "\n".join(line.rstrip() for line in lines)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def citation_hashes(root: Path, memory: Memory) -> list[str]:
    """The ``cites:`` value for a memory as its code is now: ``"<citation> <hash>"`` per readable one."""
    out = []
    for entry in citations(memory):
        digest = cite_hash(root, entry)
        if digest is not None:
            out.append(f"{entry} {digest}")
    return out


def hashes_for(root: Path, paths: list[str]) -> list[str]:
    """The ``cites:`` value for a new memory's ``paths`` (before there is a Memory)."""
    out = []
    for entry in paths:
        if entry.strip() and not is_scope(entry):
            digest = cite_hash(root, entry)
            if digest is not None:
                out.append(f"{entry} {digest}")
    return out


def recorded(memory: Memory) -> dict[str, str]:
    """The hashes the memory's frontmatter recorded, by citation."""
    return _parse(dict(memory.extra).get(CITES_KEY))


def _parse(raw: object) -> dict[str, str]:
    if not isinstance(raw, list):
        return {}
    out: dict[str, str] = {}
    for item in raw:
        if isinstance(item, str) and " " in item:
            entry, _, digest = item.rpartition(" ")
            out[entry] = digest
    return out


def changed(root: Path, memory: Memory) -> list[str]:
    """The citations whose text changed (or vanished) since their hash was recorded; a citation with no
    recorded hash is not judged (it was never reviewed)."""
    return changed_cites(root, list(memory.paths), dict(memory.extra).get(CITES_KEY))


def changed_cites(root: Path, paths: list[str], cites: object) -> list[str]:
    """:func:`changed` over a memory's ``paths`` and ``cites`` values (as an index record holds them)."""
    known = _parse(cites)
    return [
        entry
        for entry in paths
        if entry in known and not is_scope(entry) and cite_hash(root, entry) != known[entry]
    ]
