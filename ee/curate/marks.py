"""What a context pack says about a memory the review queue has not settled: checked just in time.

- **Stale citation.** A memory whose ``cites:`` hashes (:mod:`ee.curate.citations`) no longer match the code
  is marked ``stale: the code it cites changed in <commit>`` (or ``… has uncommitted changes``).
- **Unresolved contradiction.** A memory in a contradiction no person decided (a pending ``contradiction``
  candidate, or an explicit ``contradicts`` link without a decision) is marked with the other side and the
  candidate to decide it, so a pack never presents both sides as authoritative without a mark.

Read only: nothing here writes; ``ee curate scan`` proposes the reviews.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ee.curate.model import candidate_id

if TYPE_CHECKING:
    from pathlib import Path

# A memory id → [(the other side, the candidate that decides it)] of its unresolved contradictions.
Sides = Callable[[str], list[tuple[str, str]]]
# A memory id → the (a, b) pairs (a < b) of the contradictions it is a side of.
Pairs = Mapping[str, tuple[tuple[str, str], ...]]


def linked_pairs(records: Iterable[Mapping[str, Any]]) -> Pairs:
    """Memory id → the ``(a, b)`` pairs (a < b) of the ``contradicts`` links it is in, from ``records``
    (``{"id", "links"}``, links as index records hold them: ``[type, to]`` or a mapping). They depend on
    the records alone, so a pack finds them once per generation (``ee.pack.items.review_marks``)."""
    pairs: set[tuple[str, str]] = set()
    for record in records:
        for link in record.get("links") or ():
            kind, to = (link.get("type"), link.get("to")) if isinstance(link, Mapping) else link
            if kind == "contradicts" and to:
                a, b = sorted((str(record["id"]), str(to)))
                pairs.add((a, b))
    return _by_side(pairs)


def contradictions(root: Path, linked: Pairs) -> Sides:
    """memory id → [(the other side, candidate id)] of each unresolved contradiction: a pair of ``linked``
    (:func:`linked_pairs`: the ``contradicts`` links), or a pending contradiction candidate of the queue.

    A pair's candidate id (a hash) and its decision are looked up only for the memories asked about: a
    pack asks for its few items, and a store holds hundreds of pairs (at 10k memories, hashing them all
    was 2 of a served context's ~27 ms of CPU). The decisions and the queue, which change without a new
    generation, are read on every call."""
    from ee.curate.decisions import read_decisions
    from ee.curate.state import PROPOSALS_FILE, SCAN_FILE, read_state
    from ee.errors import StorageError

    decisions, _ = read_decisions(root)
    try:
        queued = {**read_state(root, SCAN_FILE), **read_state(root, PROPOSALS_FILE)}
    except StorageError:
        queued = {}  # (a broken state file is reported by `ee curate list`, not by every pack)
    pending = _by_side(
        (candidate.subjects[0], candidate.subjects[1])
        for candidate in queued.values()
        if candidate.type == "contradiction" and len(candidate.subjects) == 2
    )

    def sides(memory_id: str) -> list[tuple[str, str]]:
        out = []
        for a, b in sorted({*linked.get(memory_id, ()), *pending.get(memory_id, ())}):
            cid = candidate_id("contradiction", (a, b))
            decision = decisions.get(cid)
            if decision is not None and decision.verdict in ("accept", "reject"):
                continue  # a person settled it (a snooze settles nothing)
            out += [(other, cid) for this, other in ((a, b), (b, a)) if this == memory_id]
        return out

    return sides


def _by_side(pairs: Iterable[tuple[str, str]]) -> Pairs:
    """Memory id → the pairs it is a side of, each once."""
    of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in set(pairs):
        of[pair[0]].append(pair)
        if pair[1] != pair[0]:
            of[pair[1]].append(pair)
    return {memory_id: tuple(found) for memory_id, found in of.items()}


def stale_citation(root: Path, record: Mapping[str, Any], git: Any = None) -> str | None:
    """``stale: the code it cites changed in <commit>`` when a cited text changed, else None. ``git``: the
    workspace's :class:`ee.git.repo.Git` (a pack's view holds one), so finding the commit starts no
    extra process to locate the repository."""
    from ee.curate.citations import changed_cites
    from ee.store.frontmatter import CITES_KEY

    extra = record.get("extra") or {}
    cites = extra.get(CITES_KEY) if isinstance(extra, Mapping) else None
    if not cites:
        return None
    moved = changed_cites(root, list(record.get("paths") or ()), cites)
    if not moved:
        return None
    recorded = {entry: digest for entry, _, digest in (str(c).rpartition(" ") for c in cites)}
    return f"stale: the code it cites changed in {last_change(root, moved[0], recorded.get(moved[0]), git)}"


def last_change(root: Path, entry: str, digest: str | None, git: Any = None) -> str:
    """Where the cited text changed: the last commit of the file, or the working tree when the committed
    version still holds what was recorded. Two git commands, so remembered per file identity and HEAD: a
    served pack repeats them only when the file or the branch moved."""
    from ee.curate.citations import file_key
    from ee.errors import GitError
    from ee.git.repo import Git

    code = git if git is not None else Git(root)
    try:
        head = code.head_ref()
    except GitError:
        head = ""  # (not a repository: the answer below names the file)
    return _last_change(str(root), entry, digest, file_key(root, entry), head, code)


@functools.lru_cache(maxsize=1024)
def _last_change(root: str, entry: str, digest: str | None, identity: Any, head: str, code: Any) -> str:
    from ee.curate.citations import split_cite, text_hash
    from ee.errors import GitError

    del root, identity, head  # (the cache key: the same answer while they stay the same)
    name, start, end = split_cite(entry)
    try:
        committed = code.read_specs([f"HEAD:{code.repo_path(name)}"]).get(f"HEAD:{code.repo_path(name)}")
        if committed is not None and text_hash(committed, start, end) == digest:
            return f"the working tree ({name} has uncommitted changes)"
        commit = code.run("log", "-1", "--format=%h", "--", name).strip()
    except GitError:
        return name
    return f"{commit} ({name})" if commit else name
