"""Evidence for a query: ranked as memories are (BM25 + static cosine, fused, calibrated relevance), with
time deciding between sessions that say nearly the same thing, and merged into the memories' ranked list.

**Ranking.** The best ``candidatePool`` of each arm are fused (:func:`ee.query.fusion.fuse_arrays`) and
each candidate gets the calibrated relevance of :mod:`ee.query.relevance` (the same scale as memories):
below the relevance floor it is dropped. **Time.** Two candidates from different days that are about the
same subject (cosine of their vectors ≥ :data:`SAME_SUBJECT`) and both close to the query (the newer's
calibrated relevance at least :data:`CLOSE` of the older's, and :data:`RELEVANT`) are ordered newest first:
the newer moves up to just before the older, which is marked ``superseded_by_time`` (the newer's id). A
question about the present (:data:`PRESENT`: "now", "today", "currently", "still", "should", …) asks for
the latest state: any two answers to it are a pair (cosine ≥ :data:`SAME_SUBJECT_NOW`), and every score is
multiplied by ``1 + RECENCY × age`` (1 for the newest candidate, 0 for the oldest). A question about the
past ("why did we change", "before", "originally") keeps the relevance order, marks included. Tuned on the
session dev set (``ee eval sessions tests/fixtures/sessions``): newest-session-first for knowledge updates
0.22 → 0.89, MRR 0.79 → 0.83 (with the weights below).

A newer piece moves up only when it matches the question nearly as strongly as the older one
(:data:`CLOSE_STRENGTH`; for a question about the present, whose answers' wording rarely matches, more
loosely: :data:`CLOSE_STRENGTH_NOW`): calibrated relevance is near 1 for most pieces a question's words
reach, so it cannot tell the piece that answers from a later one that merely mentions the subject ("how do
clients page through invoices now?" put the next week's "Stripe webhooks mark invoices paid" above the
cursor change). "Do we", "are we" and "we use" ask about the present too ("what do we use for
migrations?").

**Sessions.** What is looked for is a session (the conversation that held the answer), and a session that
discussed a subject over several exchanges is likelier to hold it than one that touched it once: each
candidate's score gains :data:`SESSION_SHARE` of the scores of the best :data:`SESSION_TOP` other candidates
of its session. Dev set MRR +0.006 (0.2: -0.005; every other piece of the session: +0.002 and
newest-first 0.89 → 0.78). Both together: MRR 0.826 → 0.847, newest-first 0.89 unchanged.

**Crowding.** What is looked for is the session, and a list that repeats one session's pieces pushes the
next session down: each candidate's score is multiplied by :data:`CROWDING` once for every better
candidate of its own session (after the session share above), so a second piece of a session goes below
another session's piece that scores nearly as well. Dev set MRR 0.847 → 0.851, everything else unchanged.

**Merge.** Memory hits keep their order; each evidence hit goes before the first memory hit whose relevance
is lower than its own times :data:`EVIDENCE_WEIGHT` (the trust class ``cass_evidence`` ranks below a memory
a person wrote at equal relevance).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ee.sessions.evidence import TRUST

SAME_SUBJECT = 0.55
SAME_SUBJECT_NOW = 0.2
CLOSE = 0.75
RELEVANT = 0.5
RECENCY = 0.2
# The semantic arm's weight in the fusion (ee.query.fusion; memories: 0.3). An exchange is long and chatty:
# its static vector drifts to the session's general topic, while the words a question names are what tell
# one exchange from the next. Dev set MRR: 0.5 → 0.790, 0.3 → 0.816, 0.15 → 0.824, 0 → 0.813.
WEIGHT_SEMANTIC = 0.15
TIME_WINDOW = 10
# A newer piece moves up only with at least this share of the older's match strength (:func:`_strength`):
# for a question about the present, and for any other (not about the past). Dev set MRR 0.826 → 0.840
# (0.4 / 0.5) → 0.847 (0.4 / 0.9); 0.5 and more for the present lost knowledge updates (newest-first 0.78).
CLOSE_STRENGTH_NOW = 0.4
CLOSE_STRENGTH = 0.9
SESSION_SHARE = 0.1
# A session's second piece, and each after it, counts this much less for every better piece of its session
# before it (a web search's "host crowding"): what is looked for is the session, so a list that repeats the
# best session pushes the next one down. Dev set MRR 0.847 → 0.851 (0.8: 0.853, but packs 0.913 → 0.906;
# 0.7 and 0.5: 0.854, packs 0.899 and 0.862), everything else unchanged.
CROWDING = 0.9
SESSION_TOP = 2  # (the other pieces of the session that add to a candidate's score)
PRESENT = re.compile(
    r"\b(now|today|currently|current|these days|nowadays|at the moment|at present|still|any ?more|latest|"
    r"should|do we|are we|we use|we're using)\b",
    re.IGNORECASE,
)
EVIDENCE_WEIGHT = 0.9
CONFIDENCE = 0.45  # the initial confidence of cass_evidence (DESIGN.md §5)
_PAST = re.compile(
    r"\b(why did (we|you|i)|before|originally|previously|used to|earlier|at first|initially|"
    r"in the beginning|first (chose|choose|picked|used)|old|switch(ed)? from|change[sd]? from)\b",
    re.IGNORECASE,
)


class _Gen:
    __slots__ = ("lexical",)

    def __init__(self, lexical: Any) -> None:
        self.lexical = lexical


class _RelevanceView:
    """What :func:`ee.query.relevance.evidence` reads of a view, over the evidence index: its lexical
    index and the static model (evidence has the static arm only, whichever arm answers memories)."""

    __slots__ = ("embedder", "gen", "model_folder", "root")

    arm = "static"

    def __init__(self, lexical: Any, view: Any, embedder: Any) -> None:
        self.gen = _Gen(lexical)
        self.embedder = embedder
        self.model_folder = view.model_folder if view is not None else None
        self.root = view.root if view is not None else None

    @property
    def semantic_ready(self) -> bool:
        return self.embedder is not None and self.model_folder is not None

    def model_profile(self) -> Any:
        from ee.index.embedder import model_profile
        from ee.index.freshness import CACHE_PATH

        folder = self.root / Path(CACHE_PATH).parent if self.root is not None else None
        return model_profile(self.embedder, folder)


def rank_evidence(
    root: Path,
    view: Any,
    text: str,
    pool: int,
    floor: float,
    mode: str,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """The evidence of the workspace at ``root`` for the query ``text``, best first, each a hit dict
    (without ``rank``): ``limit`` of them after the first ``offset``, and how many there are in all.
    ``view`` is the memories' index view: its embedding model embeds the query."""
    from ee.index.tokenize import tokenize
    from ee.query.explain import words_holding
    from ee.query.fusion import fuse_arrays
    from ee.query.relevance import evidence
    from ee.sessions import index, store

    embedder = view.embedder() if view is not None else None
    idx = index.fresh(root, embedder, view.model_key if view is not None else "")
    if idx is None or idx.size == 0 or not text.strip():
        return [], 0
    lexical_on = mode in ("hybrid", "lexical", "exact")
    semantic_on = mode in ("hybrid", "semantic") and embedder is not None and idx.vectors is not None
    lex = idx.lexical.scores(tokenize(text)) if lexical_on else np.zeros(idx.size)
    sem: np.ndarray | None = None
    if semantic_on and embedder is not None and idx.vectors is not None:
        query_vector = embedder.encode([text])[0].astype(np.float32)
        sem = _cosines(idx.matrix(), query_vector)
    union = _top(lex, pool, idx.ids)
    if sem is not None:
        union = sorted(set(union) | set(_top(sem, pool, idx.ids)))
    if not union:
        return [], 0
    lex_values = lex[union] if lexical_on else None
    sem_values = sem[union].astype(np.float64) if sem is not None else None
    _ln, _sn, fused = fuse_arrays(
        lex_values, sem_values, lambda i: idx.ids[union[i]], weight_semantic=WEIGHT_SEMANTIC
    )
    found = evidence(_RelevanceView(idx.lexical, view, embedder), text, union, sem_values, sem)
    relevance = found.relevance
    past = _PAST.search(text) is not None
    scores = fused.tolist()
    present = not past and PRESENT.search(text) is not None
    if present and RECENCY:
        scores = _recent_first([idx.times[p] for p in union], scores)
    with store.connect(root, write=False) as db:
        session = store.session_of(db, [idx.ids[p] for p in union]) if db is not None else {}
    owners = [session.get(idx.ids[p], idx.ids[p]) for p in union]
    scores = _with_session(owners, scores)
    scores = _crowded(owners, scores, [idx.ids[p] for p in union])
    order = sorted(range(len(union)), key=lambda i: (-round(scores[i], 12), idx.ids[union[i]]))
    kept = [i for i in order if floor <= 0 or relevance[i] >= floor]
    positions = [union[i] for i in kept]
    subject = SAME_SUBJECT_NOW if present else SAME_SUBJECT
    strength = _strength(lex_values, sem_values)
    superseded = _by_time(
        idx, positions, [float(relevance[i]) for i in kept], [strength[i] for i in kept], subject
    )
    order_pos = positions if past else _newest_first(positions, superseded)
    total = len(order_pos)
    with store.connect(root, write=False) as db:
        order_pos = order_pos[offset : offset + limit] if limit is not None else order_pos[offset:]
        rows = store.get_many(db, [idx.ids[p] for p in order_pos]) if db is not None else {}
    at = {union[i]: i for i in kept}
    hits = []
    for pos in order_pos:
        item = rows.get(idx.ids[pos])
        if item is None:
            continue
        i = at[pos]
        newer = superseded.get(pos)
        hits.append(
            _hit(
                item,
                scores[i],
                float(relevance[i]),
                words_holding(text, set(found.matched[i])),
                idx.ids[newer] if newer is not None else None,
            )
        )
    return hits, total


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Every piece's cosine with the query (rows are unit vectors; einsum sums each row alike)."""
    out: np.ndarray = np.einsum("ij,j->i", vectors, query)
    return out


def _top(scores: np.ndarray, k: int, ids: list[str]) -> list[int]:
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        values = scores[candidates]
        threshold = np.partition(values, values.size - k)[values.size - k]
        candidates = candidates[values >= threshold]
    return sorted(candidates.tolist(), key=lambda p: (-float(scores[p]), ids[p]))[:k]


def _by_time(
    idx: Any, positions: list[int], relevance: list[float], strength: list[float], subject: float
) -> dict[int, int]:
    """Older position → the position that supersedes it: of the later days' pieces about the same subject
    (a cosine of at least ``subject``) and close to the question (a relevance of :data:`RELEVANT`, and at
    least :data:`CLOSE` of the older's) and matching it nearly as strongly (:data:`CLOSE_STRENGTH_NOW` or
    :data:`CLOSE_STRENGTH` of the older's strength),
    among the first :data:`TIME_WINDOW`, the most similar one. (The newest of them instead let one late,
    loosely related piece jump over every answer.)"""
    close_score = CLOSE_STRENGTH_NOW if subject == SAME_SUBJECT_NOW else CLOSE_STRENGTH
    if idx.vectors is None or len(positions) < 2:
        return {}
    head = positions[:TIME_WINDOW]
    vectors = np.asarray(idx.vectors[head], dtype=np.float32)
    similar = vectors @ vectors.T
    out: dict[int, int] = {}
    for a, older in enumerate(head):
        best: int | None = None
        for b, newer in enumerate(head):
            if a == b or idx.times[newer][:10] <= idx.times[older][:10]:
                continue  # (the same day: one conversation, not an update)
            if relevance[b] < RELEVANT or relevance[b] < CLOSE * relevance[a] or similar[a, b] < subject:
                continue
            if strength[b] < close_score * strength[a]:
                continue
            if best is None or similar[a, b] > similar[a, head.index(best)]:
                best = newer
        if best is not None:
            out[older] = best
    return out


def _newest_first(positions: list[int], superseded: dict[int, int]) -> list[int]:
    """The order with each piece that supersedes others moved up to just before the first of them."""
    order = list(positions)
    for newer in dict.fromkeys(superseded.values()):
        first = min(order.index(old) for old, new in superseded.items() if new == newer)
        at = order.index(newer)
        if at > first:
            order.insert(first, order.pop(at))
    return order


def _strength(lexical: np.ndarray | None, semantic: np.ndarray | None) -> list[float]:
    """How strongly each candidate matches, on a scale whose ratios mean something (the fusion's min-max
    makes the weakest of any two candidates 0): BM25 over the best BM25, and the raw cosine, weighted as
    the fusion weighs them."""
    size = len(lexical) if lexical is not None else len(semantic) if semantic is not None else 0
    out = np.zeros(size, dtype=np.float64)
    if lexical is not None and size and lexical.max() > 0:
        out += (1.0 - WEIGHT_SEMANTIC) * lexical / lexical.max()
    if semantic is not None:
        out += WEIGHT_SEMANTIC * np.clip(semantic, 0.0, None)
    return [float(v) for v in out]


def _with_session(sessions: list[str], scores: list[float]) -> list[float]:
    """Each score plus :data:`SESSION_SHARE` of the best :data:`SESSION_TOP` other scores of its session."""
    by_session: dict[str, list[float]] = {}
    for session, score in zip(sessions, scores, strict=True):
        by_session.setdefault(session, []).append(score)
    best = {s: sorted(values, reverse=True)[: SESSION_TOP + 1] for s, values in by_session.items()}
    out = []
    for session, score in zip(sessions, scores, strict=True):
        others = list(best[session])
        if score in others:
            others.remove(score)
        out.append(score + SESSION_SHARE * sum(others[:SESSION_TOP]))
    return out


def _crowded(sessions: list[str], scores: list[float], ids: list[str]) -> list[float]:
    """Each score times :data:`CROWDING` once for every better candidate of its session (ties by id, as
    the ranking breaks them)."""
    order = sorted(range(len(scores)), key=lambda i: (-round(scores[i], 12), ids[i]))
    seen: dict[str, int] = {}
    out = list(scores)
    for i in order:
        n = seen.get(sessions[i], 0)
        out[i] = scores[i] * CROWDING**n
        seen[sessions[i]] = n + 1
    return out


def _recent_first(times: list[str], fused: list[float]) -> list[float]:
    """For a question about the present: each score times ``1 + RECENCY × age`` with age 1 for the newest
    candidate and 0 for the oldest (linear in time between them)."""
    from ee.store.ids import parse_time

    stamps = [parse_time(t).timestamp() for t in times]
    low, high = min(stamps), max(stamps)
    if high <= low:
        return fused
    return [f * (1 + RECENCY * (t - low) / (high - low)) for f, t in zip(fused, stamps, strict=True)]


def _hit(item: Any, fused: float, relevance: float, matched: list[str], newer: str | None) -> dict[str, Any]:
    flags = []
    if item.secrets:
        flags.append("secret_masked")
    if item.flagged:
        flags.append("quarantined")
    if newer:
        flags.append("superseded_by_time")
    if item.sidechain:
        flags.append("sidechain")
    shown = ", ".join(matched[:4]) or "its meaning"
    why = f"session evidence ({item.file_name} turn {item.turn}, {item.time}) matching {shown}"
    if newer:
        why += f"; superseded by time by {newer}"
    hit: dict[str, Any] = {
        "type": "evidence",
        "id": item.id,
        "score": round(fused * CONFIDENCE, 6),
        "relevance": round(relevance, 4),
        "title": _title(item.text),
        "kind": "evidence",
        "trust": TRUST,
        "posture": "advisory",
        "time": item.time,
        "why": why,
        "flags": flags,
        "body": item.text,
        "provenance": item.provenance(),
    }
    if newer:
        hit["superseded_by"] = newer
    return hit


def _title(text: str) -> str:
    from ee.model import title_of

    return title_of(text)


def merge(
    memory_hits: list[dict[str, Any]], evidence_hits: list[dict[str, Any]], limit: int, start: int = 0
) -> list[dict[str, Any]]:
    """One ranked list: memories in their order, each evidence hit before the first memory whose relevance
    is lower than its own × :data:`EVIDENCE_WEIGHT`; at most ``limit``, ranked from ``start`` + 1 (a later
    page continues both lists where the pages before it stopped, so the pages together are this merge of
    the whole lists)."""
    out: list[dict[str, Any]] = []
    memories = [dict(h, type="memory") for h in memory_hits]
    evidence = list(evidence_hits)
    while (memories or evidence) and len(out) < limit:
        if not evidence:
            out.append(memories.pop(0))
        elif not memories:
            out.append(evidence.pop(0))
        else:
            mem = memories[0].get("relevance")
            ev = float(evidence[0]["relevance"]) * EVIDENCE_WEIGHT
            out.append(evidence.pop(0) if mem is not None and ev > float(mem) else memories.pop(0))
    return [
        {"rank": rank, **hit} if "rank" not in hit else dict(hit, rank=rank)
        for rank, hit in enumerate(out, start + 1)
    ]
