"""Pack candidates and items: the ranked hits as candidates with their cost, and the chosen ones as the JSON
items of the pack (trimmed by ``fields``), the omitted ones with their reason, and the pack hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ee.pack.pieces import TRUNCATION_MARK, item_text
from ee.pack.profiles import SECTION_TITLES, Profile, section_of
from ee.pack.select import Candidate
from ee.query.engine import count_tokens
from ee.query.engine import trim as trim_hit
from ee.query.relevance import below_floor
from ee.text import cut_at_word

MINIMAL = ("id", "section", "authoritative", "title", "marks")  # (marks: only when there is one)
EXPLAINED = ("explanation", "selection")  # what --explain adds: kept whatever the fields
SUMMARY = (
    *MINIMAL,
    "kind",
    "level",
    "tags",
    "trust",
    "posture",
    "confidence",
    "score",
    "rank",
    "tokens",
    "why",
    "flags",
)
OMITTED_MINIMAL = ("id", "reason")
REASONS = (
    "below_relevance_floor",
    "quarantined",
    "invalid_at_reference_time",
    "duplicate",
    "quota",
    "max_results",
    "budget",
)


def candidates(
    ctx: Any,
    ranked: list[Any],
    profile: Profile,
    limit: int,
    item_room: dict[bool, int],
    section_room: dict[str, int] | None = None,
) -> list[Candidate]:
    """The best ``limit`` ranked memories (the candidate pool), each a candidate.

    Nothing leaves silently: a candidate that may not be packed carries its reason from the start
    (``below_relevance_floor`` when its calibrated relevance is under the floor, ``quarantined``,
    ``invalid_at_reference_time``, ``budget`` when not even a cut item fits) and is listed in ``omitted``.
    There is no floor relative to the best candidate: the floor is the absolute relevance of
    ee.query.relevance, the same in every query.

    ``item_room`` caps an item's tokens per block (the item budget less the headings it would open), so
    at a small budget the best memory still fits, cut short, rather than not at all. ``section_room``
    (for a profile without spill, whose sections can never borrow room) caps it to its section's share
    too: an item larger than its section's share could otherwise never be taken.
    """
    from ee.query.explain import body_for

    if not ranked:
        return []
    gen = ctx.view.gen
    best = ranked[0].final
    posture = ctx.query.get("temporalValidity.posture", "relaxed")
    out: list[Candidate] = []
    pool = ranked[:limit]
    marks_of = review_marks(ctx)
    for scored in pool:
        record, st = gen.records[scored.pos], scored.standing
        authoritative = st.posture == "authoritative" and not st.quarantined
        body = body_for(ctx, scored.pos, record)
        marks = marks_of(record)
        cap = min(profile.max_item_tokens, item_room[authoritative])
        if section_room is not None and section_room[section_of(record["kind"])] > 0:
            cap = min(cap, section_room[section_of(record["kind"])])
        shown, truncated, cost = fit_item(
            record["kind"], body, record["id"], st.trust, confidence_of(st), cap, marks
        )
        reason = None
        if below_floor(ctx.floor, scored.relevance):
            reason = "below_relevance_floor"
        elif st.quarantined:
            reason = "quarantined"
        elif not st.valid and posture != "ignore":
            reason = "invalid_at_reference_time"
        elif cost is None:
            reason = "budget"
        if cost is None:  # not even a cut item fits: report the whole item's size
            cost = count_tokens(
                item_text(record["kind"], body, record["id"], st.trust, confidence_of(st), marks)
            )
        out.append(
            Candidate(
                index=len(out),
                pos=scored.pos,
                memory_id=record["id"],
                section=section_of(record["kind"]),
                authoritative=authoritative,
                body=shown,
                truncated=truncated,
                cost=cost,
                relevance=scored.final / best if best > 0 else 0.0,
                reason=reason,
                marks=marks,
            )
        )
    return out


def review_marks(ctx: Any) -> Any:
    """record → its marks (:mod:`ee.curate.marks`), checked now: a stale citation, an unresolved
    contradiction. None for a past view (the code then is not now's). The generation's ``contradicts``
    pairs are found once per generation (:func:`ee.query.engine.generation_memo`: a warm server's packs
    walked 2,000 linked records on every request at 10k memories, ~1.5 ms of CPU)."""
    root = ctx.view.root
    if root is None or ctx.view.commit is not None:
        return lambda record: ()
    from ee.curate.marks import contradictions, linked_pairs, stale_citation
    from ee.query.engine import generation_memo

    gen = ctx.view.gen
    memo = generation_memo(gen)
    linked = memo.get("contradicts")
    if linked is None:
        linked = memo["contradicts"] = linked_pairs(gen.link_records())
    sides = contradictions(root, linked)

    def marks(record: dict[str, Any]) -> tuple[str, ...]:
        out = []
        stale = stale_citation(root, record, ctx.view.git)
        if stale:
            out.append(stale)
        for other, cid in sides(record["id"]):
            out.append(f"contradiction: unresolved, {other} says otherwise (decide: ee curate show {cid})")
        return tuple(out)

    return marks


def confidence_of(standing: Any) -> float:
    return round(float(standing.effective), 4)


def fit_item(
    kind: str,
    body: str,
    memory_id: str,
    trust: str,
    confidence: float,
    cap: int,
    marks: tuple[str, ...] = (),
) -> tuple[str, bool, int | None]:
    """(body, truncated, tokens): the body whole when its item text fits ``cap`` tokens, else cut at a word
    boundary and marked with `` […]``; tokens is None when not even a cut item fits."""
    cost = count_tokens(item_text(kind, body, memory_id, trust, confidence, marks))
    if cost <= cap:
        return body, False, cost

    def cost_at(length: int) -> int:
        return count_tokens(item_text(kind, _cut(body, length), memory_id, trust, confidence, marks))

    low, high = 0, len(body)  # the longest prefix length whose cut item fits
    while low < high:
        middle = (low + high + 1) // 2
        if cost_at(middle) <= cap:
            low = middle
        else:
            high = middle - 1
    if low == 0 or not body[:low].strip():
        return body, False, None
    cut = _cut(body, low)
    return cut, True, count_tokens(item_text(kind, cut, memory_id, trust, confidence, marks))


def _cut(body: str, length: int) -> str:
    """The first ``length`` characters, ended at a whole word when that keeps at least half, marked."""
    return cut_at_word(body, length, TRUNCATION_MARK, least=length // 2)


def item_dict(ctx: Any, c: Candidate, scored: Any, rank: int, explain: bool) -> dict[str, Any]:
    """The full JSON item (every field; :func:`trim` cuts it down to the requested ``fields``)."""
    from ee.query.explain import hit_dict

    hit = hit_dict(ctx, scored, rank)
    how = (
        f"MMR {c.trace.get('value', 0):.3f}"
        if c.trace.get("objective") == "mmr"
        else f"coverage gain {c.trace.get('gain', 0):.3f}"
    )
    spill = ", spilled over" if c.chosen_pass == 2 else ""
    item: dict[str, Any] = {
        "id": c.memory_id,
        "section": c.section,
        "authoritative": c.authoritative,
        "title": hit["title"],
        "kind": hit["kind"],
        "level": hit["level"],
        "tags": hit["tags"],
        "trust": hit["trust"],
        "posture": hit["posture"],
        "confidence": confidence_of(scored.standing),
        "score": hit["score"],
        "relevance": hit["relevance"],
        "rank": rank,
        "tokens": c.cost,
        "truncated": c.truncated,
        "why": f"{hit['why']}; picked for {SECTION_TITLES[c.section].lower()} by {how}{spill}",
        "flags": hit["flags"],
        "body": c.body,
        "path": hit["path"],
        "provenance": hit["provenance"],
        "components": hit["components"],
        "factors": hit["factors"],
    }
    if c.marks:
        item["marks"] = list(c.marks)
    if explain:
        item["explanation"] = hit.get("explanation")
        item["selection"] = c.trace
    item["memory"] = hit["memory"]
    return item


def omitted_dict(ctx: Any, c: Candidate, scored: Any) -> dict[str, Any]:
    from ee.query.explain import title_of

    reason, _, detail = (c.reason or "budget").partition(":")
    out: dict[str, Any] = {
        "id": c.memory_id,
        "reason": reason,
        "section": c.section,
        "score": round(scored.final, 6),
        "relevance": None if scored.relevance is None else round(scored.relevance, 4),
        # Quarantined text never reaches the agent, not even as an omitted entry's title.
        "title": "[quarantined: instruction-like text from a non-human source]"
        if reason == "quarantined" or scored.standing.quarantined
        else title_of(c.body),
        "tokens": c.cost,
    }
    if detail:
        out["detail"] = f"{detail} share used up"
    if c.duplicate_of:
        out["duplicate_of"] = c.duplicate_of
    return out


def trim(item: dict[str, Any], fields: str) -> dict[str, Any]:
    """The item cut down to ``fields`` as a hit is (ee.query.engine.trim), with a pack item's own lists;
    ``explanation`` and ``selection`` (there only when ``--explain`` asked for them) always stay."""
    return trim_hit(item, fields, (*MINIMAL, *EXPLAINED), (*SUMMARY, *EXPLAINED))


def trim_omitted(entry: dict[str, Any], fields: str) -> dict[str, Any]:
    if fields == "minimal":
        return {k: entry[k] for k in OMITTED_MINIMAL}
    return entry


def pack_hash(items: list[dict[str, Any]]) -> str:
    """sha256 over the canonical JSON (sorted keys, no spaces, UTF-8) of the chosen items in pack order: each
    item's id, section, authority, the body as shown, and the blob of the version it came from."""
    canonical = [
        {
            "id": i["id"],
            "section": i["section"],
            "authoritative": i["authoritative"],
            "body": i["body"],
            "blob": i["provenance"]["blob"],
        }
        for i in items
    ]
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
