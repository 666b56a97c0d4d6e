"""Duplicates at write time: ``ee remember`` (and MCP ``remember``) of what the store already holds.

The same text (:func:`ee.curate.similar.normalise`: case, punctuation and spacing ignored) writes no file:
the answer names the existing memory in ``duplicate_of``, says so in ``degraded``, and records a
``confirmation`` feedback event on it (counted once per actor: :mod:`ee.policy.feedback`, so an agent cannot
raise its own memory's confidence by repeating it). A near-duplicate (:data:`ee.curate.similar.MERGE_BAR`) is
written, and a ``merge`` candidate goes to the review queue for a person to decide.

The same text is looked up with ``git grep`` (the files sharing the text's first words, and only those are
read). Near-identical by embedding (:data:`ee.curate.similar.NEAR_BARS`: above the ``duplicate`` bar, no
file; above the ``merge`` bar, a merge candidate) asks the index's vectors when an index exists
(:func:`find_near`), embedding only the new text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.model import Memory
    from ee.policy.trust import Actor
    from ee.results.memory import Remembered
    from ee.workspace import Workspace


def find_duplicate(ws: Workspace, body: str) -> tuple[str | None, list[tuple[str, str]]]:
    """(the id of a memory with the same text, or None; [(id, why)] of near-duplicates).

    Both need the same first words (:data:`ee.curate.similar.HEAD_WORDS`), so ``git grep`` finds the few
    memory files whose text holds them (tracked or not, whatever the spacing) and only those are read: a
    cold ``ee remember`` at 10k memories reads a handful of files and imports nothing heavy."""
    from ee.curate.similar import Features, classify
    from ee.errors import EeError
    from ee.store.frontmatter import split

    mine = Features.of(body)
    near: list[tuple[str, str]] = []
    for rel in _sharing_head(ws, body):
        try:
            other = split(ws.store.read_bytes(rel).decode("utf-8", "replace"))[1]
        except EeError:
            continue  # (a broken file is reported by ee doctor, not here)
        relation = classify(Features.of(other), mine)
        if relation is None:
            continue
        if relation.type == "duplicate":
            return _id_of(ws, rel), []
        if relation.type == "merge":
            near.append((_id_of(ws, rel), relation.reason))
    return None, near


def find_near(
    ws: Workspace, body: str, tags: list[str], kind: str | None
) -> tuple[str | None, list[tuple[str, str]], str | None]:
    """(a memory near-identical by embedding, or None; [(id, why)] of merge candidates; why the index
    could not be asked, or None). The text is embedded alone; the store's vectors are the index's
    (:func:`ee.curate.near.for_write`), judged by :func:`ee.curate.similar.relate` with the same bars as a
    scan."""
    from ee.curate.near import for_write
    from ee.curate.similar import NEAR_BARS, Features, relate

    vectors, why_not = for_write(ws)
    if vectors is None:
        return None, [], why_not
    bars = NEAR_BARS[vectors.arm]
    mine = Features.of(body)
    hits = vectors.nearest(vectors.embed([body], [tags], [kind or "fact"]), bars.merge)[0]
    near: list[tuple[str, str]] = []
    for memory_id, cosine in hits:
        position = vectors.row(memory_id)
        if position is None:
            continue
        relation = relate(Features.of(vectors.view.gen.body(position)), mine, cosine, vectors.arm)
        if relation is None:
            continue
        if relation.type == "duplicate":
            return memory_id, [], None
        if relation.type == "merge":
            near.append((memory_id, relation.reason))
    return None, near, None


def _merge_near(words: list[tuple[str, str]], vectors: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Merge candidates found by words and by vectors, each memory once (the word rule's entry first)."""
    seen = {memory_id for memory_id, _ in words}
    return words + [(memory_id, why) for memory_id, why in vectors if memory_id not in seen]


MAX_GREP_WORD = 64
_ERE_SPECIAL = re.compile(r"([.\[\]{}()\\*+?^$|])")


def _sharing_head(ws: Workspace, body: str) -> list[str]:
    """The memory files (workspace paths) with a line holding the first words of ``body``'s first line."""
    from ee.curate.similar import HEAD_WORDS
    from ee.store.files import MEMORIES

    first = next((line.split() for line in body.splitlines() if line.strip()), [])[:HEAD_WORDS]
    if not first:
        return []
    # A word is cut to its start (the files found are read and compared anyway): a 300 KiB "word" must not
    # become a command line longer than the system takes.
    parts = []
    for word in first:
        parts.append(_ERE_SPECIAL.sub(r"\\\1", word[:MAX_GREP_WORD]))
        if len(word) > MAX_GREP_WORD:
            break  # (what follows a cut word is not next to it)
    pattern = "[[:space:]]+".join(parts)
    git = ws.git
    out = git.run(
        "grep",
        "-l",
        "-z",
        "-E",
        "--untracked",
        "--full-name",
        "-e",
        pattern,
        "--",
        git.repo_path(MEMORIES),
        check=False,
    )
    paths = (git.workspace_path(name) for name in out.split("\0") if name)
    return sorted(p for p in paths if p.endswith(".md") and "/." not in p.removeprefix(MEMORIES))


def _id_of(ws: Workspace, rel: str) -> str:
    memory, _problems = ws.store.read(rel)
    return memory.id


def remember(
    ws: Workspace, text: str, actor: Actor, redact: bool = False, **fields: Any
) -> tuple[Remembered, list[dict[str, Any]]]:
    """``ee remember``: write a new memory, or confirm the one that already says it. What it did and
    ``degraded``."""
    from ee.policy.secrets import guard
    from ee.store.fields import check_text

    body = check_text(text)
    guard({"body": body}, redact=redact)  # refused before the store is even searched
    duplicate, near = find_duplicate(ws, body)
    notes: list[dict[str, Any]] = []
    how = "the same text"
    if duplicate is None:
        duplicate, close, why_not = find_near(ws, body, list(fields.get("tags") or ()), fields.get("kind"))
        how = "a near-identical text"
        near = _merge_near(near, close)
        if why_not:
            notes.append(
                {
                    "code": "near_duplicates_unchecked",
                    "severity": "info",
                    "message": f"near-duplicates by embedding not looked for: {why_not}",
                    "repair": "ee index rebuild",
                }
            )
    if duplicate is not None:
        return _confirm(ws, duplicate, actor, how)
    from ee.results.memory import Remembered

    memory = ws.remember(text, actor=actor, redact=redact, **fields)
    merges = None
    degraded: list[dict[str, Any]] = notes
    if actor.agent:
        from ee.policy.injection import scan_memory_injection

        if scan_memory_injection(memory).flagged:  # (as ee.query.standing quarantines it)
            degraded.append(
                {
                    "code": "quarantined",
                    "severity": "warning",
                    "message": f"written, but quarantined: {memory.id} reads like an instruction to an "
                    "agent, so no pack will include it until a person reviews it",
                    "repair": f"a person reviews it: ee memory trust {memory.id} --class human_explicit",
                }
            )
    if near:
        merges = tuple(c.id for c in _propose_merges(ws, memory, near))
        degraded.append(
            {
                "code": "near_duplicate",
                "severity": "info",
                "message": f"written; it is nearly the same as {', '.join(i for i, _ in near)}: "
                "a merge is proposed for review",
                "repair": "ee curate list --type merge",
            }
        )
    return Remembered(memory.to_dict(), merge_candidates=merges), degraded


def _confirm(
    ws: Workspace, memory_id: str, actor: Actor, how: str = "the same text"
) -> tuple[Remembered, list[dict[str, Any]]]:
    from ee.ops.feedback import record_outcome
    from ee.results.memory import Remembered

    outcome = record_outcome(ws, memory_id, "confirmation", None, actor)
    done = Remembered(
        ws.memory_show(memory_id).to_json(),
        written=False,
        confirmation={"event": outcome["event"]["id"], "commit": outcome["commit"]},
        effective_confidence=outcome["effective_confidence"],
    )
    degraded = [
        {
            "code": "duplicate",
            "severity": "info",
            "message": f"the store already holds {how} as {memory_id}: no new file; a confirmation was "
            "recorded on it (one per actor counts)",
            "repair": f"ee memory show {memory_id}",
        }
    ]
    return done, degraded


def _propose_merges(ws: Workspace, memory: Memory, near: list[tuple[str, str]]) -> list[Any]:
    from ee.curate.queue import propose
    from ee.curate.state import merge_candidate

    found = f"when {memory.id} was written"
    return propose(ws, [merge_candidate(ws.get(other_id), memory, why, found) for other_id, why in near])
