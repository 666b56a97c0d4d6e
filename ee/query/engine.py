"""ee.query.v1 → ranked, explained hits over one index view (the working tree, or a past commit).

Retrieval: BM25 over ee's tokens and cosine over static embeddings, each over the whole eligible set;
the best ``candidatePool`` of each arm are fused (ee.query.fusion), then multiplied by the memory's
standing (ee.query.standing). Ties break by memory id, and time enters only through the day (decay)
and the reference time (validity), so the same store and query give byte-identical output.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from ee.errors import PolicyError
from ee.index.tokenize import tokenize
from ee.query import filters as flt
from ee.query.document import Query, encode_cursor
from ee.query.relevance import DEFAULT_MIN_RELEVANCE, Evidence, below_floor, evidence
from ee.query.standing import (
    Standing,
    Window,
    resolve_trust,
    settled_standing,
    superseded_map,
    window_of,
    with_validity,
)
from ee.store.ids import format_time, parse_time, utcnow

SUMMARY_FIELDS = (
    "rank",
    "id",
    "score",
    "title",
    "level",
    "kind",
    "tags",
    "trust",
    "posture",
    "why",
    "path",
    "flags",
)
MINIMAL_FIELDS = ("rank", "id", "score", "title")


def count_tokens(text: str) -> int:
    """ee's token count: ⌈UTF-8 bytes / 4⌉, the usual size of a BPE token on English and code.

    Used for every budget (search results and packs), so budgets are consistent and never exceeded.
    """
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


# Scored, Context and _Settled are plain slotted classes, not dataclasses: building a dataclass costs
# ~0.6 ms at import (its methods are generated and compiled), and every fresh `ee search` imports this.


class Scored:
    """One candidate: its retrieval components, then its standing and final score once ranked."""

    __slots__ = (
        "evidence",
        "exact",
        "final",
        "fused",
        "hops",
        "lexical",
        "lexical_norm",
        "multipliers",
        "pos",
        "relevance",
        "semantic",
        "semantic_norm",
        "standing",
    )

    def __init__(
        self,
        pos: int,
        fused: float,
        lexical: tuple[float, int] | None,
        semantic: tuple[float, int] | None,
        lexical_norm: float = 0.0,
        semantic_norm: float = 0.0,
        exact: bool = False,
        hops: int | None = None,
    ) -> None:
        self.pos = pos
        self.fused = fused
        self.lexical = lexical  # (score, rank)
        self.semantic = semantic
        self.lexical_norm = lexical_norm
        self.semantic_norm = semantic_norm
        self.exact = exact
        self.hops = hops
        self.standing: Standing | None = None
        self.multipliers: dict[str, float] = {}
        self.final = 0.0
        # Calibrated relevance (ee.query.relevance): None for a memory only the graph reached.
        self.relevance: float | None = 1.0 if exact else None
        self.evidence: tuple[Evidence, int] | None = None  # (the query's evidence, this candidate's index)


class Context:
    """What ranking a query needs, computed once: the view, the query, the day and the reference time."""

    __slots__ = ("degraded", "floor", "memo", "now", "query", "reference", "view")

    def __init__(
        self,
        view: Any,
        query: Query,
        now: datetime,
        reference: datetime,
        degraded: list[dict[str, Any]],
        floor: float = DEFAULT_MIN_RELEVANCE,
    ) -> None:
        self.view = view
        self.floor = floor  # the relevance floor: hits below it are dropped (0: off)
        self.query = query
        self.now = now  # the day, for decay
        self.reference = reference  # for validity
        self.degraded = degraded
        self.memo: dict[str, Any] = {}  # per-query values computed once (ids, term masks)

    @property
    def ids(self) -> list[str]:
        """Memory ids by position (a column of the generation: no record is decoded for them)."""
        ids: list[str] = self.view.gen.ids
        return ids


_GENERATION_MEMO: dict[str, Any] = {}


def generation_memo(gen: Any) -> dict[str, Any]:
    """Values derived from a whole generation (ids, the superseded map), kept for the generation queried
    last: a generation never changes once built, so a long-lived process (``ee watch``'s server) walks
    its records once, not on every query."""
    if _GENERATION_MEMO.get("gen") is not gen:
        _GENERATION_MEMO.clear()
        _GENERATION_MEMO["gen"] = gen
    return _GENERATION_MEMO


def run_search(
    view: Any,
    query: Query,
    reference: datetime | None = None,
    allow_bypass: bool = False,
    min_relevance: float | None = None,
) -> dict[str, Any]:
    """The search response data (the ``data`` of the ee.response.v1 envelope)."""
    ctx = prepare(view, query, reference, allow_bypass, min_relevance)
    ranked, dropped = split_at_floor(ctx, rank(ctx)[0])
    total = len(ranked)
    note_nothing_relevant(ctx, ranked, dropped)
    offset = query.offset()
    page = ranked[offset : offset + query.limit]
    hits, budget_cut = _hits(ctx, page, offset)
    next_offset = offset + len(hits)
    more = next_offset < len(ranked)
    reason = _truncated_by(query, budget_cut) if more else None
    data: dict[str, Any] = {
        "query": query_block(ctx),
        "total": total,
        "returned": len(hits),
        "offset": offset,
        "hits": hits,
        "truncated": reason is not None,
        "truncated_reason": reason,
        "next_cursor": encode_cursor(query.binding(), next_offset) if more else None,
        "min_relevance": ctx.floor,
        "omitted": [omitted_entry(ctx, dropped)] if dropped else [],
    }
    if query.get("eval"):
        data["eval"] = evaluate(query.get("eval"), [s.pos for s in ranked], view.gen, query.limit)
    return data | {"degraded": ctx.degraded}


NEAREST = 3  # with --explain, the hits nearest the floor that it dropped are shown with their evidence


def omitted_entry(ctx: Context, dropped: list[Scored]) -> dict[str, Any]:
    """What the floor dropped: a count, and with ``output.explain`` the :data:`NEAREST` best of them with
    their relevance evidence, so a person can see why each fell under the floor."""
    entry: dict[str, Any] = {"reason": "below_relevance_floor", "count": len(dropped)}
    if ctx.query.get("output.explain"):
        from ee.query.explain import relevance_of

        ids = ctx.ids
        nearest = sorted(dropped, key=lambda s: (-(s.relevance or 0.0), ids[s.pos]))[:NEAREST]
        entry["nearest"] = [
            {"id": ids[s.pos], "relevance": round(s.relevance or 0.0, 4), "explanation": relevance_of(ctx, s)}
            for s in nearest
        ]
    return entry


def _truncated_by(query: Query, budget_cut: bool) -> str:
    """The setting that stopped a page before the ranked results ran out (the cursor continues there)."""
    if budget_cut:
        return "budget.maxTokens"
    page = query.get("pagination.limit")
    if page and int(page) <= int(query.get("budget.maxResults", 100)):
        return "pagination.limit"
    return "budget.maxResults"


def prepare(
    view: Any,
    query: Query,
    reference: datetime | None = None,
    allow_bypass: bool = False,
    min_relevance: float | None = None,
) -> Context:
    """The ranking context ``run_search`` builds, for callers that rank without paging (packs, ``why``).

    ``min_relevance`` is the relevance floor (None: the default, 0: off)."""
    real_now = utcnow()
    ref_spec = query.get("temporalValidity.referenceTime")
    ref = parse_time(ref_spec) if ref_spec else (reference or real_now)
    _check_redaction(query, allow_bypass)
    # Decay runs on the day the question is about: today, or the asOf time for a view of the past.
    base = reference if view.commit and reference is not None else real_now
    floor = DEFAULT_MIN_RELEVANCE if min_relevance is None else float(min_relevance)
    return Context(
        view, query, base.replace(hour=0, minute=0, second=0, microsecond=0), ref, list(view.degraded), floor
    )


def split_at_floor(ctx: Context, ranked: list[Scored]) -> tuple[list[Scored], list[Scored]]:
    """(the ranked memories at or above the relevance floor, those below it), each in rank order."""
    kept: list[Scored] = []
    dropped: list[Scored] = []
    for item in ranked:
        (dropped if below_floor(ctx.floor, item.relevance) else kept).append(item)
    return kept, dropped


def note_nothing_relevant(ctx: Context, kept: list[Scored], dropped: list[Scored]) -> None:
    """Say so in ``degraded`` when the floor left nothing: the empty answer is the answer, not a fault."""
    if kept or ctx.view.gen.size == 0:
        return
    why = (
        f"{len(dropped)} candidate(s) below the relevance floor {ctx.floor:g}"
        if dropped
        else "no memory matches it"
    )
    ctx.degraded.append(
        {
            "code": "no_relevant_memories",
            "severity": "info",
            "message": f"no memory is relevant to this query ({why})",
            "repair": "rephrase the query with the words your memories use, or lower the floor: "
            "--min-relevance 0.3 (0 turns it off)",
        }
    )


def query_block(ctx: Context) -> dict[str, Any]:
    """The ``query`` object of a response, as ``run_search`` writes it."""
    view, query = ctx.view, ctx.query
    return {
        "text": echoed(query.text),
        "mode": query.mode,
        "effective_mode": _effective_mode(ctx),
        "semantic_arm": view.arm if _effective_mode(ctx) in ("hybrid", "semantic") else None,
        "speed": query.speed,
        "as_of": {"commit": view.commit, "reference_time": format_time(ctx.reference)}
        if view.commit
        else None,
    }


def echoed(text: str) -> str:
    """A query's text as an answer shows it: with any secret in it masked. A prompt or a branch name may
    hold one (a hook packs for them), and the answer goes into an agent's context or ``.ee/context.md``."""
    from ee.policy.secrets import mask_text

    return mask_text(text)


def _effective_mode(ctx: Context) -> str:
    mode = "lexical" if ctx.query.speed == "instant" and ctx.query.mode == "hybrid" else ctx.query.mode
    if mode in ("hybrid", "semantic") and not ctx.view.semantic_ready:
        return "lexical"
    return mode


def _check_redaction(query: Query, allow_bypass: bool) -> None:
    """Unmasking is the workspace's call, never the query's: ``bypass`` unmasks every class and
    ``allowCategories`` the named ones, so each needs ``[redaction] allow_bypass = true``."""
    if allow_bypass:
        return
    if query.get("redaction.policy") == "bypass":
        raise PolicyError(
            "redaction.policy 'bypass' is not allowed in this workspace",
            "set [redaction] allow_bypass = true in .ee/config.toml, or use 'respect'",
        )
    if query.get("redaction.allowCategories"):
        raise PolicyError(
            "redaction.allowCategories is not allowed in this workspace",
            "set [redaction] allow_bypass = true in .ee/config.toml, or leave allowCategories out",
        )


# ------------------------------------------------------------------------------------------ ranking


def rank(ctx: Context) -> tuple[list[Scored], int]:
    """Every eligible, matching memory, best first."""
    gen, query = ctx.view.gen, ctx.query
    if gen.size == 0:
        return [], 0
    eligible = _eligible(ctx)
    mode = _effective_mode(ctx)
    if mode != query.mode:
        ctx.degraded.append(
            {
                "code": "semantic_unavailable" if query.speed != "instant" else "speed_instant",
                "severity": "info" if query.speed == "instant" else "warning",
                "message": f"{query.mode} search ran as lexical"
                + (" (speed 'instant')" if query.speed == "instant" else ": no usable embedding model"),
                "repair": "" if query.speed == "instant" else "ee index status  # then see its repair",
            }
        )
    scored = _retrieve(ctx, mode, eligible)
    scored = _graph(ctx, scored, eligible)
    out: list[Scored] = []
    memo = generation_memo(gen)
    superseded = memo.get("superseded")
    if superseded is None:  # from the links column: records are decoded for the scored memories only
        superseded = memo["superseded"] = (
            superseded_map(gen.link_records(), trust_of(ctx)) if gen.links else {}
        )
    posture = query.get("temporalValidity.posture", "relaxed")
    trust_spec = query.get("trust") or {}
    settled = _settled(ctx, memo)
    ids = ctx.ids
    relaxed = posture == "relaxed"
    for item in scored:
        entry = settled.get(item.pos)
        if entry is None:
            record = gen.records[item.pos]
            base = settled_standing(
                record, _events(ctx, record), _prov(ctx, record), _writer(ctx, record), ctx.now
            )
            entry = settled[item.pos] = _Settled(base, window_of(record), base.multipliers())
        st = with_validity(entry.standing, entry.window, ctx.reference, superseded.get(ids[item.pos]))
        if trust_spec and not flt.passes_trust(st.trust, st.posture, trust_spec):
            continue
        if not st.valid and posture == "strict":
            continue
        item.standing = st
        if st is entry.standing:  # valid: the multipliers of the settled standing, product included
            item.multipliers = dict(entry.multipliers)
            item.final = item.fused * entry.product
        else:
            item.multipliers = st.multipliers(relaxed_invalid=relaxed)
            item.final = item.fused * math.prod(item.multipliers.values())
        out.append(item)
    out.sort(key=lambda s: (-round(s.final, 12), ids[s.pos]))
    return out, len(out)


class _Settled:
    """What ranking keeps of one memory's :func:`settled_standing` (see :func:`_settled`)."""

    __slots__ = ("multipliers", "product", "standing", "window")

    def __init__(self, standing: Standing, window: Window, multipliers: dict[str, float]) -> None:
        self.standing = standing  # as if valid
        self.window = window
        self.multipliers = multipliers  # of ``standing``
        self.product = math.prod(multipliers.values())


def _settled(ctx: Context, memo: dict[str, Any]) -> dict[int, _Settled]:
    """Position → its settled standing, kept with the generation for one state and day.

    A settled standing is a function of the record (the generation's), the feedback events and provenance
    (the view's ``state``, loaded afresh with every new view) and the day ``ctx.now``: the same three
    objects, the same values, so only validity (the exact reference time) is worked out per query.
    """
    key = memo.get("settled_key")
    state = ctx.view.state
    if key is None or key[0] is not state or key[1] != ctx.now:
        memo["settled_key"] = (state, ctx.now)
        memo["settled"] = {}
    settled: dict[int, _Settled] = memo["settled"]
    return settled


def _eligible(ctx: Context) -> np.ndarray:
    gen, query = ctx.view.gen, ctx.query
    tags = query.get("tags") or {}
    filters = query.get("filters") or {}
    time_spec = query.get("time") or {}
    mask = np.ones(gen.size, dtype=bool)
    if not (tags or filters or time_spec):
        return mask
    memo = generation_memo(gen)
    unknown = flt.unknown_filter_fields(filters, gen.records, memo)
    for name in unknown:
        ctx.degraded.append(
            {
                "code": "filter_unknown_field",
                "severity": "warning",
                "message": f"no memory has the field {name!r}: the filter matches nothing",
                "repair": "check the field name (ee schema export ee.memory.v1)",
            }
        )
    # Masks over every memory, each predicate decided once per distinct value (see ee.query.filters).
    if tags:
        mask &= flt.tags_mask(gen.tag_lists(), tags, memo)
    if filters:
        mask &= flt.filters_mask(gen.records, filters, memo)
    if time_spec:
        created, micros = _created(ctx, memo)
        mask &= flt.time_mask(created, micros, time_spec, mask)
    return mask


def _created(ctx: Context, memo: dict[str, Any]) -> tuple[list[str | None], tuple[Any, Any, Any]]:
    """Each memory's creation time (its ``created``, else its first commit's date), by position, and the
    same parsed (:func:`ee.query.filters.created_micros`): kept with the generation for one view state
    (the provenance), so a time filter is a comparison over arrays, not a pass over every record."""
    from ee.query.standing import created_of

    kept = memo.get("created")
    if kept is None or kept[0] is not ctx.view.state:
        records = ctx.view.gen.records.all()  # (one pass decodes them all)
        created = [created_of(r, None if r.get("created") else _prov(ctx, r)) for r in records]
        kept = memo["created"] = (ctx.view.state, created, flt.created_micros(created))
    return kept[1], kept[2]


def _retrieve(ctx: Context, mode: str, eligible: np.ndarray) -> list[Scored]:
    from ee.query.fusion import fuse_arrays, semantic_weight

    gen, query = ctx.view.gen, ctx.query
    ids = ctx.ids
    pool = query.pool
    lex_top: list[tuple[int, float]] = []
    sem_top: list[tuple[int, float]] = []
    exact: set[int] = set()
    if mode == "exact":
        exact = _exact_matches(ctx, eligible)
        lex_scores = gen.lexical.scores(tokenize(query.text))
        ranked = sorted(exact, key=lambda p: (-lex_scores[p], ids[p]))
        return [
            Scored(p, 1.0 / (1 + i), (float(lex_scores[p]), i + 1), None, exact=True)
            for i, p in enumerate(ranked)
        ]
    if mode in ("hybrid", "lexical"):
        lex_scores = gen.lexical.scores(tokenize(query.text))
        lex_top = _top(lex_scores, pool, ids, eligible)
    if mode in ("hybrid", "semantic"):
        vector = ctx.view.query_vector(query.text)
        sem_scores = ctx.view.cosines(vector)
        sem_top = _top(sem_scores, pool, ids, eligible)  # (float32: the same order, half the bytes)
    lex_rank = {p: (s, i + 1) for i, (p, s) in enumerate(lex_top)}
    sem_rank = {p: (s, i + 1) for i, (p, s) in enumerate(sem_top)}
    lex_values: np.ndarray | None = None
    sem_values: np.ndarray | None = None
    if mode == "lexical":
        union = [p for p, _s in lex_top]
        lex_values = np.array([s for _p, s in lex_top], dtype=np.float64)
    elif mode == "semantic":
        union = [p for p, _s in sem_top]
        sem_values = np.array([s for _p, s in sem_top], dtype=np.float64)
    else:
        # Both arms score every candidate of either pool (a BM25 zero stays zero): fusing each arm's pool
        # alone loses 0.012 recall@10 on the development set (scripts/tune_retrieval.py).
        union = sorted(set(lex_rank) | set(sem_rank))
        lex_missing = [p for p in union if p not in lex_rank]
        lex_missing = [p for p, s in zip(lex_missing, lex_scores[lex_missing].tolist(), strict=True) if s > 0]
        lex_rank.update(_ranks_of(lex_scores, lex_missing))
        sem_rank.update(_ranks_of(sem_scores, [p for p in union if p not in sem_rank]))
        lex_values, sem_values = lex_scores[union], sem_scores[union].astype(np.float64)
    # Min-max fusion over the candidates, as ee.query.fusion.fuse computes it, one array per component.
    weight = semantic_weight(ctx.view.arm)
    lex_norm, sem_norm, fused = fuse_arrays(
        lex_values, sem_values, lambda i: ids[union[i]], weight_semantic=weight
    )
    out = [
        Scored(p, f, lex_rank.get(p), sem_rank.get(p), ln, sn)
        for p, f, ln, sn in zip(union, fused.tolist(), lex_norm.tolist(), sem_norm.tolist(), strict=True)
    ]
    # Calibrated relevance: coverage of the query's terms and the raw cosine, whatever the ranking mode.
    cosines = sem_values  # (None in lexical mode: lexical-only relevance)
    store = sem_scores[eligible] if sem_values is not None else None  # every eligible memory's cosine
    found = evidence(ctx.view, query.text, union, cosines, store, eligible)
    for i, (item, value) in enumerate(zip(out, found.relevance.tolist(), strict=True)):
        item.relevance = value
        item.evidence = (found, i)
    return out


def _ranks_of(scores: np.ndarray, positions: list[int]) -> dict[int, tuple[float, int]]:
    """Position → (its score, 1 + how many memories score higher), for a candidate one arm's pool left out.

    Only the scores above the lowest of the candidates' can be higher than any of them: those are sorted
    (30-70 % of a 100k store, instead of every score) and each candidate is placed by bisection. Scores
    holding NaN (no order) take a count per candidate."""
    if not positions:
        return {}
    values = scores[positions]
    if np.isnan(scores).any():
        higher = [int(np.count_nonzero(scores > v)) for v in values]
    else:
        above = np.sort(scores[scores > values.min()])
        # the scores > v are exactly those after v's last copy in ascending order
        higher = (above.size - np.searchsorted(above, values, side="right")).tolist()
    return {p: (float(v), h + 1) for p, v, h in zip(positions, values.tolist(), higher, strict=True)}


def _top(scores: np.ndarray, k: int, ids: list[str], eligible: np.ndarray) -> list[tuple[int, float]]:
    """The ``k`` best eligible positions that score above 0, with their scores: best first, ties by id."""
    candidates = np.flatnonzero((scores > 0) & eligible)
    values = scores[candidates]
    if candidates.size > k:
        threshold = np.partition(values, values.size - k)[values.size - k]  # the k-th best score
        keep = values >= threshold  # with every tie at the edge: the ids decide below
        candidates, values = candidates[keep], values[keep]
    pairs = zip(candidates.tolist(), values.tolist(), strict=True)
    return sorted(pairs, key=lambda pair: (-pair[1], ids[pair[0]]))[:k]


def _exact_matches(ctx: Context, eligible: np.ndarray) -> set[int]:
    """Memories whose body or tags contain the query as a literal (case-insensitive) phrase: its words in
    order in the body with any whitespace between them (the body's whitespace runs read as one space), or
    the phrase itself in the memory's tags joined by spaces."""
    needle = " ".join(ctx.query.text.split()).casefold()
    if not needle:
        return set(np.flatnonzero(eligible).tolist())  # (the empty phrase is in every text)
    gen = ctx.view.gen
    texts = _exact_texts(gen) if "\x00" not in needle else None
    if texts is None:  # a NUL in the phrase or in a body or tag: memory by memory
        tag_lists = gen.tag_lists()
        return {
            pos
            for pos in np.flatnonzero(eligible).tolist()
            if needle in " ".join(gen.body(pos).split()).casefold()
            or needle in " ".join(tag_lists[pos]).casefold()
        }
    bodies, tags = texts
    # casefold keeps whitespace whitespace (and makes none), and re's \s is str.isspace: the words with
    # whitespace runs between them are exactly the needle in the body with its whitespace collapsed.
    words = re.compile(r"\s+".join(re.escape(word) for word in needle.split(" ")))
    phrase = re.compile(re.escape(needle))
    found = np.asarray(_pieces_matching(bodies, words) + _pieces_matching(tags, phrase), dtype=np.int64)
    return set(found[eligible[found]].tolist()) if found.size else set()


def _exact_texts(gen: Any) -> tuple[str, str] | None:
    """Every body, then every memory's tags joined by spaces, case-folded and joined by NUL into one string
    each, kept with the generation: a query then runs one regular-expression scan over each (~40 ms at
    100k) instead of normalising 10^5 bodies in Python (~2 s). Building it is a few C passes over the
    bodies' bytes (~0.2 s at 100k). None when a body or a tag holds a NUL (positions would shift)."""
    memo = generation_memo(gen)
    if "exact" not in memo:
        bodies = gen.packed_bodies.joined(b"\x00").decode("utf-8", "surrogatepass").casefold()
        tags = "\x00".join(" ".join(tags) for tags in gen.tag_lists()).casefold()
        pieces = max(gen.size - 1, 0)
        whole = bodies.count("\x00") == tags.count("\x00") == pieces
        memo["exact"] = (bodies, tags) if whole else None
    texts: tuple[str, str] | None = memo["exact"]
    return texts


def _pieces_matching(text: str, pattern: re.Pattern[str]) -> list[int]:
    """The index of every NUL-separated piece of ``text`` in which ``pattern`` (which matches no NUL)
    matches, ascending: one search per matching piece, and a count of the NULs skipped on the way."""
    out: list[int] = []
    piece, at = 0, 0
    while (match := pattern.search(text, at)) is not None:
        piece += text.count("\x00", at, match.start())
        out.append(piece)
        at = text.find("\x00", match.end()) + 1  # the next piece (0: this was the last one)
        if at == 0:
            break
        piece += 1
    return out


def _graph(ctx: Context, scored: list[Scored], eligible: np.ndarray) -> list[Scored]:
    spec = ctx.query.get("graph")
    if not spec:
        return scored
    from ee.query.graph import expand

    gen = ctx.view.gen
    hops = expand(_link_view(gen), spec, ctx.degraded)
    by_pos = {s.pos: s for s in scored}
    if spec.get("seedMemories"):
        keep = []
        for pos, distance in hops.items():
            if not eligible[pos]:
                continue
            item = by_pos.get(pos) or Scored(pos, 0.0, None, None)
            item.hops = distance
            # The graph answer is what the seeds asked for: the text's relevance floor does not apply.
            item.relevance = None
            item.evidence = None
            # A neighbour the text did not retrieve still belongs to the graph answer, ranked by nearness.
            item.fused = max(item.fused, 0.0) + 0.01 / (1 + distance)
            keep.append(item)
        scored = keep
    if not spec.get("includeOrphans", True):
        from ee.query.graph import linked_positions

        linked = linked_positions(_link_view(gen), spec)
        scored = [s for s in scored if s.pos in linked]
    return scored


def _link_view(gen: Any) -> list[dict[str, Any]]:
    """``{"id", "links"}`` for every position: what the graph reads, from the generation's columns."""
    memo = generation_memo(gen)
    view: list[dict[str, Any]] | None = memo.get("link_view")
    if view is None:
        view = memo["link_view"] = [{"id": memory_id, "links": []} for memory_id in gen.ids]
        for pos, _memory_id, links in gen.links:
            view[pos]["links"] = links
    return view


def _events(ctx: Context, record: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = ctx.view.state.get("events", {}).get(record["id"], [])
    return events


def _prov(ctx: Context, record: dict[str, Any]) -> list[str] | None:
    prov: list[str] | None = ctx.view.state.get("provenance", {}).get(record["path"])
    return prov


def _writer(ctx: Context, record: dict[str, Any]) -> str:
    from ee.index.provenance import writer_of

    return writer_of(ctx.view.state, record["path"], record["id"])


def trust_of(ctx: Context) -> Callable[[str], str | None]:
    """Memory id → the trust class ee grants it in ``ctx``'s view (None: not in it)."""
    gen = ctx.view.gen

    def granted(memory_id: str) -> str | None:
        pos = gen.position(memory_id)
        if pos is None:
            return None
        record = gen.records[pos]
        return resolve_trust(record, _writer(ctx, record))

    return granted


# ------------------------------------------------------------------------------------------ output


def _hits(ctx: Context, page: list[Scored], offset: int) -> tuple[list[dict[str, Any]], bool]:
    from ee.query.explain import hit_dict

    query = ctx.query
    budget = int(query.get("budget.maxTokens", 0) or 0)
    fields = query.get("output.fields", "standard")
    full = fields not in ("minimal", "summary", "standard")  # the only one keeping the memory block
    used = 0
    out: list[dict[str, Any]] = []
    for i, item in enumerate(page):
        hit = hit_dict(ctx, item, offset + i + 1, memory=full)
        cost = count_tokens(hit.get("body", "") or hit["title"])
        if budget and used + cost > budget:
            return out, True
        used += cost
        out.append(hit if fields == "standard" else trim(hit, fields))  # (standard: no memory block to drop)
    return out, False


def trim(
    hit: dict[str, Any],
    fields: str,
    minimal: tuple[str, ...] = (*MINIMAL_FIELDS, "explanation"),
    summary: tuple[str, ...] = (*SUMMARY_FIELDS, "explanation"),
) -> dict[str, Any]:
    """The hit cut down to ``fields``: the keys of ``minimal`` or ``summary`` that it has, everything but
    the memory block for ``standard``, all of it for ``full``. An ``explanation`` (there only when it was
    asked for) always stays. A pack item is cut the same way, with its own lists (ee.pack.items.trim)."""
    if fields == "minimal":
        return {k: hit[k] for k in minimal if k in hit}
    if fields == "summary":
        return {k: hit[k] for k in summary if k in hit}
    if fields == "standard":
        return {k: v for k, v in hit.items() if k != "memory"}
    return hit


def evaluate(spec: dict[str, Any], ranked_positions: list[int], gen: Any, k: int) -> dict[str, Any]:
    """Echo the eval block; with expectedMemoryIds, their ranks, recall@k and MRR@k."""
    out: dict[str, Any] = {
        key: spec[key] for key in ("scenarioId", "labels", "expectedMemoryIds") if key in spec
    }
    expected = spec.get("expectedMemoryIds")
    if not expected:
        return out
    order = {gen.ids[p]: i + 1 for i, p in enumerate(ranked_positions)}
    ranks = {mid: order.get(mid) for mid in expected}
    found = [r for r in ranks.values() if r is not None and r <= k]
    first = min((r for r in ranks.values() if r is not None and r <= k), default=None)
    out.update(
        {
            "k": k,
            "ranks": ranks,
            "recall": round(len(found) / len(expected), 6),
            "mrr": round(1.0 / first, 6) if first else 0.0,
        }
    )
    return out
