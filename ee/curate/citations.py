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
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ee.store.frontmatter import CITES_KEY

if TYPE_CHECKING:
    from ee.curate.model import Candidate
    from ee.model import Memory
    from ee.workspace import Workspace

GLOB_CHARS = frozenset("*?[{")
_RANGE_RE = re.compile(r"^(?P<path>.+?):L?(?P<start>\d{1,7})(?:-L?(?P<end>\d{1,7}))?$")
MAX_CITED_BYTES = 4 * 1024 * 1024  # a larger file is not hashed (a build artefact, not code one cites)
_HASH_CHARS = 12


def is_scope(entry: str) -> bool:
    return any(c in GLOB_CHARS for c in entry) or entry.endswith("/")


@functools.lru_cache(maxsize=4096)
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
    """The hash of the cited text (lines with trailing blanks dropped), or None when it cannot be read.

    Just in time, for every memory a pack considers, so it costs one ``stat`` while the file is unchanged:
    the check that the path stays inside the repository and the hash are remembered per file identity
    (device, inode, size, modification time; :func:`_checked_hash`)."""
    identity = file_key(root, entry)
    if identity is None:
        return None
    name, start, end = split_cite(entry)
    return _checked_hash(str(root), name, identity, start, end)


def file_key(root: Path, entry: str) -> tuple[int, int, int, int] | None:
    """(device, inode, size, modification time) of the file a citation names, or None (missing, not a
    regular file, too large, or a name that leaves the repository)."""
    name, _, _ = split_cite(entry)
    if name.startswith("/") or "\0" in name or ".." in name.split("/"):
        return None
    try:
        info = os.stat(os.path.join(root, name))
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CITED_BYTES:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


@functools.lru_cache(maxsize=4096)
def _checked_hash(
    root: str, name: str, identity: tuple[int, int, int, int], start: int | None, end: int | None
) -> str | None:
    """:func:`text_hash` of a cited file, checked inside the repository (every link on the way resolved),
    remembered while the same file is unchanged. A link swapped in later names another file (another
    identity), so it is checked again before anything is read."""
    path = cited_file(Path(root), name)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:  # (cited_file checked the resolved path stays in the repo)
            data = handle.read(MAX_CITED_BYTES + 1)
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


def stale_candidate(root: Path, memory: Memory, moved: list[str], now: str = "") -> Candidate:
    """The ``stale-citation`` candidate for a memory whose cited ``moved`` entries changed: the same id
    from a scan and from a pack (its subjects: the memory and each citation with the hash it has now)."""
    from ee.curate.model import ACTIONS, Candidate, offered
    from ee.curate.state import memory_ref

    marks = [f"{entry}@{cite_hash(root, entry) or 'gone'}" for entry in moved]
    return Candidate.make(
        "stale-citation",
        [memory.id, *marks],
        title=f"cited code changed: {memory.title}",
        reason=f"the code it cites changed since it was recorded: {', '.join(moved)}",
        evidence=[memory_ref(memory)],
        default_action=ACTIONS["stale-citation"][0],
        actions=offered("stale-citation"),
        created=now,
    )


def propose_stale(ws: Workspace, memory_ids: list[str]) -> None:
    """A pack that marked memories stale proposes their review (a private proposal under ``.ee/curate/``,
    as an agent's is; the store is not touched). Cheap and idempotent: only the memories a pack marked,
    and the queue's lock is taken only for a candidate it does not hold yet. Best effort: a pack is what
    was asked for, so a busy or broken queue is left for ``ee curate scan``."""
    from ee.curate.decisions import read_decisions
    from ee.curate.state import PROPOSALS_FILE, propose, read_state
    from ee.errors import EeError

    try:
        found = []
        for memory_id in memory_ids:
            memory = ws.get(memory_id)
            moved = changed(ws.root, memory)
            if moved:
                found.append(stale_candidate(ws.root, memory, moved))
        held = read_state(ws.root, PROPOSALS_FILE)
        decisions, _ = read_decisions(ws.root)
        new = [c for c in found if c.id not in held and c.id not in decisions]
        if new:
            propose(ws, new)
    except (EeError, OSError):
        return
