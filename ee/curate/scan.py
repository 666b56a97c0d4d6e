"""``ee curate scan``: look over the store and propose what a person should review.

Scanning is kept apart from applying (basic-memory's ``ScanResult``): the scan only computes candidates
and replaces ``.ee/curate/scan.json``; nothing in ``memories/`` changes until a person accepts one.

What it looks for, each rule deterministic and explained in the candidate's ``reason``:

- ``duplicate`` / ``merge`` / ``contradiction`` / ``update``: pairs of memories (:mod:`ee.curate.similar`),
  found through their shared rare words (no all-pairs comparison), and every explicit ``contradicts`` link;
- ``stale-path``: ``paths:`` entries that match no file in the repository;
- ``stale-citation``: a cited file or line range whose text changed since its hash was recorded;
- ``expired``: validity that has ended;
- ``harmful``: harmful feedback at or above ``[curate] harmful_threshold``;
- ``unused``: no context pack included it for ``[curate] unused_days`` (:mod:`ee.curate.usage`);
- ``agent-write``: an agent's memory no person reviewed, older than ``[curate] agent_max_age_days``, or
  any of them once an agent has more than ``[curate] agent_max_count``;
- ``docs`` (``--docs``): rules and commands the repository's own docs state (:mod:`ee.curate.docs`).

It also retires the pending proposals (a session's, a doc's) whose memory text the store gained since they
were proposed (:func:`ee.curate.state.retire_said`, the rule intake applies: a text the store holds is not
proposed); the report lists them.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from ee.curate.model import ACTIONS, Candidate, offered
from ee.curate.queue import list_data, pending
from ee.curate.state import SCAN_FILE, memory_ref, retire_said, write_state

if TYPE_CHECKING:
    from ee.curate.near import StoreVectors
    from ee.model import Memory
    from ee.results.curate import ScanReport
    from ee.workspace import Workspace

MAX_POSTING = 64  # a word more than this many memories share says nothing about a pair


def scan(ws: Workspace, *, docs: bool = False) -> tuple[ScanReport, list[dict[str, Any]]]:
    """Recompute the scan's candidates; the queue as it stands after, and ``degraded``."""
    from ee.store.ids import now_text

    snap = ws.store.snapshot()
    memories = snap.sorted()
    now = now_text()
    found: list[Candidate] = []
    from ee.curate.near import for_scan

    found += pairs(memories, now, for_scan(ws))
    found += stale_paths(ws, memories, now)
    found += stale_citations(ws, memories, now)
    found += expired(memories, now, settled(ws))
    found += harmful(ws, memories, now)
    found += agent_writes(ws, memories, now)
    found += unused(ws, memories, now)
    if docs:
        from ee.curate.docs import docs_candidates

        found += docs_candidates(ws, memories, now)
    unique = {c.id: c for c in found}
    with ws.lock():
        write_state(ws.root, SCAN_FILE, unique.values())
        retired = retire_said(ws, memories)
    queue, degraded = pending(ws)
    degraded = [
        *degraded,
        *(
            {
                "code": p.code,
                "severity": p.severity,
                "message": f"{p.path}: {p.message} (not scanned)",
                "repair": p.repair,
            }
            for p in snap.problems
            if p.severity == "error"
        ),
    ]
    from ee.results.curate import ScanReport

    gone = tuple((candidate.id, memory_id) for candidate, memory_id in retired)
    return ScanReport(len(memories), len(unique), list_data(queue), gone), degraded


def _candidate(
    kind: str, memories: list[Memory], title: str, reason: str, now: str, extra: tuple[str, ...] = ()
) -> Candidate:
    return Candidate.make(
        kind,
        [m.id for m in memories] + list(extra),
        title=title,
        reason=reason,
        evidence=[memory_ref(m) for m in memories],
        default_action=ACTIONS[kind][0],
        actions=offered(kind),
        created=now,
    )


# ------------------------------------------------------------------------------------ pairs


def pairs(memories: list[Memory], now: str, vectors: StoreVectors | None = None) -> list[Candidate]:
    """Duplicates, near-duplicates, contradictions and updates between memories that share rare words
    (judged by their words, and by the cosine of their index ``vectors`` when given: :func:`relate`), and
    every explicit ``contradicts`` link."""
    from ee.curate.similar import Features, relate

    live = [m for m in memories if not (m.valid_to and m.valid_to <= now)]
    order = sorted(live, key=lambda m: (m.created or "", m.id))  # older first
    rank = {m.id: i for i, m in enumerate(order)}
    features = [Features.of(m.body) for m in order]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, feature in enumerate(features):
        for token in feature.tokens:
            postings[token].append(i)
    rare = [sum(1 for t in f.tokens if len(postings[t]) <= MAX_POSTING) for f in features]
    exact: dict[str, int] = {}
    out: list[Candidate] = []
    for j, memory in enumerate(order):
        key = features[j].key
        if key in exact:  # the same text as an older memory: a duplicate of the oldest
            older = order[exact[key]]
            out.append(
                _candidate(
                    "duplicate",
                    [older, memory],
                    f"{memory.title}  (same as {older.id})",
                    "the same text (spacing and a final full stop aside)",
                    now,
                )
            )
            continue
        exact[key] = j
        shared: dict[int, int] = defaultdict(int)
        for token in features[j].tokens:
            posting = postings[token]
            if len(posting) > MAX_POSTING:
                continue
            for i in posting:
                if i < j:
                    shared[i] += 1
        # Half the rarer side's rare words shared, at least: any pair the rules could take; two, when both
        # state values or opposite words (a conflict of values shares its subject, not its wording).
        states = features[j].states
        near = sorted(
            i
            for i, count in shared.items()
            if count * 2 >= min(rare[i], rare[j]) or (count >= 2 and states and features[i].states)
        )
        for i, cosine in zip(near, _cosines(vectors, order, near, j), strict=True):
            relation = relate(features[i], features[j], cosine, vectors.arm if vectors else "static")
            if relation is None:
                continue
            older = order[i]
            out.append(
                _candidate(
                    relation.type,
                    [older, memory],
                    f"{memory.title}  ⟷  {older.title}",
                    relation.reason,
                    now,
                )
            )
    for memory in live:  # a person (or an agent) said so
        for link in memory.links:
            if link.type != "contradicts" or link.to not in rank:
                continue
            other = order[rank[link.to]]
            out.append(
                _candidate(
                    "contradiction",
                    sorted([memory, other], key=lambda m: rank[m.id]),
                    f"{memory.title}  ⟷  {other.title}",
                    f"{memory.id} links to {other.id} as contradicting it: decide which stands",
                    now,
                )
            )
    return out


def _cosines(
    vectors: StoreVectors | None, order: list[Memory], near: list[int], j: int
) -> list[float | None]:
    """The cosine of memory ``j`` with each of ``near`` (None where the index holds no row for one)."""
    row = vectors.row(order[j].id) if vectors is not None else None
    if vectors is None or row is None:
        return [None] * len(near)
    rows = [vectors.row(order[i].id) for i in near]
    known = [r for r in rows if r is not None]
    values = iter(vectors.cosines(known, row))
    return [None if r is None else next(values) for r in rows]


# ------------------------------------------------------------------------------------ staleness


def repository_files(ws: Workspace) -> set[str]:
    """The files of the repository the memories live in (tracked, and untracked but not ignored)."""
    from ee.git.repo import Git

    code = Git(ws.root)
    if not code.is_repo():
        return set()
    out = code.run("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name")
    top = code.toplevel
    prefix = ws.root.resolve().relative_to(top.resolve()).as_posix() if top else ""
    names = [name for name in out.split("\0") if name]
    if prefix and prefix != ".":
        names = [n.removeprefix(prefix + "/") for n in names if n.startswith(prefix + "/")]
    return set(names)


def _matches(entry: str, files: set[str], cache: dict[str, bool]) -> bool:
    from ee.curate.citations import is_scope, split_cite

    if entry in cache:
        return cache[entry]
    if is_scope(entry):
        pattern = entry.rstrip("/") + ("/**" if entry.endswith("/") else "")
        regex = re.compile(fnmatch.translate(pattern))
        hit = any(regex.match(name) for name in files)
    else:
        name = split_cite(entry)[0]
        hit = name in files or any(f.startswith(name.rstrip("/") + "/") for f in files)
    cache[entry] = hit
    return hit


def stale_paths(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    with_paths = [m for m in memories if m.paths and not (m.valid_to and m.valid_to <= now)]
    if not with_paths:
        return []
    files = repository_files(ws)
    cache: dict[str, bool] = {}
    out = []
    for memory in with_paths:
        gone = [entry for entry in memory.paths if not _matches(entry, files, cache)]
        if len(gone) == len(memory.paths):
            out.append(
                _candidate(
                    "stale-path",
                    [memory],
                    f"stale path: {memory.title}",
                    f"its paths match no file any more: {', '.join(gone)}",
                    now,
                )
            )
    return out


def stale_citations(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    from ee.curate.citations import changed, stale_candidate

    out = []
    for memory in memories:
        if not memory.paths or (memory.valid_to and memory.valid_to <= now):
            continue
        moved = changed(ws.root, memory)
        if moved:
            out.append(stale_candidate(ws.root, memory, moved, now))
    return out


def settled(ws: Workspace) -> set[str]:
    """The memories an accepted decision already changed: a person just looked at them."""
    from ee.curate.decisions import read_decisions

    decisions, _ = read_decisions(ws.root)
    return {s for d in decisions.values() if d.verdict == "accept" for s in d.subjects}


def expired(memories: list[Memory], now: str, done: AbstractSet[str] = frozenset()) -> list[Candidate]:
    """Memories whose validity ended, but those a person expired through the queue (already decided)."""
    return [
        _candidate("expired", [m], f"expired: {m.title}", f"its validity ended at {m.valid_to}", now)
        for m in memories
        if m.valid_to and m.valid_to <= now and m.id not in done
    ]


def harmful(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    from ee.ops.feedback import prior_of
    from ee.policy.feedback import effective_confidence
    from ee.query.standing import feedback_cutoff
    from ee.store.feedback import events_path, read_events_file
    from ee.store.ids import utcnow

    threshold = int(ws.config.get("curate.harmful_threshold"))
    cutoff = feedback_cutoff(utcnow())
    out = []
    for memory in memories:
        rel = events_path(memory.id)
        path = ws.root / rel
        if not path.is_file():
            continue
        events = read_events_file(path, rel)[0]
        state = effective_confidence(prior_of(memory.confidence, memory.trust), events, cutoff)
        if state.harmful >= threshold:
            out.append(
                _candidate(
                    "harmful",
                    [memory],
                    f"reported harmful: {memory.title}",
                    f"{state.harmful} harmful feedback event(s) (threshold {threshold}); "
                    f"effective confidence {state.effective:.2f}",
                    now,
                )
            )
    return out


def unused(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    """Memories older than ``[curate] unused_days`` that no context pack included in that many days, judged
    only once this clone's retrieval log (:mod:`ee.curate.usage`) is that old."""
    from datetime import timedelta

    from ee.curate.usage import last_retrieved
    from ee.store.ids import format_time, parse_time

    days = float(ws.config.get("curate.unused_days"))
    first, last = last_retrieved(ws.root)
    since = format_time(parse_time(now) - timedelta(days=days))
    if first is None or first > since[:10]:
        return []
    return [
        _candidate(
            "unused",
            [m],
            f"unused: {m.title}",
            f"no context pack included it since {last.get(m.id, 'the log began, ' + first)} "
            f"(more than {days:g} days)",
            now,
        )
        for m in memories
        if (m.created or now) <= since
        and last.get(m.id, "") < since[:10]
        and not (m.valid_to and m.valid_to <= now)
    ]


def agent_writes(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    """Agents' memories no person reviewed: the old ones, or all of an agent's once it wrote many."""
    from datetime import timedelta

    from ee.index.provenance import writer_of
    from ee.index.view import open_index
    from ee.store.ids import format_time, parse_time

    live = [m for m in memories if not (m.valid_to and m.valid_to <= now)]
    if not live:
        return []
    state = open_index(ws).state
    by_agent: dict[str, list[Memory]] = defaultdict(list)
    for memory in live:
        writer = writer_of(state, memory.path, memory.id)
        if writer.startswith("agent:"):
            by_agent[writer].append(memory)
        elif memory.trust in ("agent_assertion", "agent_validated") and not writer:
            continue  # a person committed it since: their commit (or review) stands for it
    max_age = float(ws.config.get("curate.agent_max_age_days"))
    max_count = int(ws.config.get("curate.agent_max_count"))
    old = format_time(parse_time(now) - timedelta(days=max_age))
    out = []
    for writer, written in sorted(by_agent.items()):
        many = len(written) > max_count
        for memory in written:
            if not (many or (memory.created or now) <= old):
                continue
            why = (
                f"{writer} wrote {len(written)} unreviewed memories (more than {max_count})"
                if many
                else f"{writer} wrote it {memory.created}, unreviewed for more than {max_age:g} days"
            )
            out.append(
                _candidate("agent-write", [memory], f"review {writer}'s memory: {memory.title}", why, now)
            )
    return out
