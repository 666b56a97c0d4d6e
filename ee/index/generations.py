"""The index's generations: each saved in a folder of its own (:func:`save_state`, :func:`load_state`), the
old ones pruned (:func:`prune`), and the ones this process wrote or opened last kept in memory (:func:`warm`,
:func:`open_generation`, :func:`forget_warm`) beside one connection per derived cache (:func:`shared_cache`).
"""

from __future__ import annotations

import marshal
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ee.config import write_private
from ee.index.cache import DerivedCache
from ee.index.freshness import CACHE_PATH, load_marshal
from ee.index.segment import Generation, PackedMap
from ee.store.files import INDEX_DIR, keep_order

KEEP_GENERATIONS = 2  # generations kept on disk (a reader may have opened the one before)

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


def keep_warm(folder: Path, entry: tuple[Generation, dict[str, Any], bool]) -> None:
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
    gen, state = Generation.load(folder), load_state(folder)
    keep_warm(folder, (gen, state, False))
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


HEAD_STATE = "head.marshal"  # what HEAD names (changes with HEAD only): provenance, head_blobs, head_commit,
_HEAD_KEYS = ("provenance", "head_blobs", "head_commit", "agent_memories", "agent_ids")  # agent_memories


def save_state(folder: Path, state: dict[str, Any], old_head: Path | None) -> None:
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


def load_state(folder: Path) -> dict[str, Any]:
    """The state; what HEAD names for every file (``provenance``, ``head_blobs``, ``agent_memories``,
    ``agent_ids``) as :class:`PackedMap` tables whose entries are decoded when looked up (a store whose
    memories agents wrote holds one entry per memory in the last two: no query builds their dicts)."""
    state: dict[str, Any] = load_marshal(folder / "state.marshal")
    head = load_marshal(folder / HEAD_STATE)
    state["head_commit"] = head["head_commit"]
    state["provenance"] = PackedMap.from_record(head["provenance"])
    state["head_blobs"] = PackedMap.from_record(head["head_blobs"])
    state["agent_memories"] = PackedMap.from_record(head["agent_memories"])
    state["agent_ids"] = PackedMap.from_record(head["agent_ids"])
    return state


def prune(folder: Path, keep: str) -> None:
    """Delete old generations, keeping the newest few for readers that opened them a moment ago."""
    import shutil  # (here: shutil and the compression modules it loads cost a query ~2.5 ms)

    found = (p for p in folder.glob("gen-*") if p.is_dir() and not p.is_symlink())  # (a link: not ours)
    gens = sorted(found, key=lambda p: p.stat().st_mtime)
    old = [p for p in gens if p.name != keep][: -(KEEP_GENERATIONS - 1) or None]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
