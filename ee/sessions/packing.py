"""Search answers and context packs with session evidence: one ranked list, one token budget.

**Search.** The memories' answer is computed as before; evidence (:mod:`ee.sessions.search`) is merged
into each page, ``maxResults`` and ``budget.maxTokens`` counting both kinds, and a cursor continues both
lists. Evidence is left out when the query asks for what only memories have (tags, field filters, graph
links, an exact phrase, a trust class above ``cass_evidence``) or ``[sessions] search`` is false.
**Packs.** With relevant evidence, the memories' pack is built within the budget minus the room the evidence
needs (at most :data:`EVIDENCE_SHARE` of it while memories compete for it), then the evidence fills
its own section, ``sessions``, with what is left: each item's text names its session, turn, time and
transcript, and an item superseded by time says so. ``asOf`` applies to memories; evidence has its own time.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ee.sessions.evidence import TRUST

EVIDENCE_SHARE = 0.5
MAX_ITEM_CHARS = 1200  # a pack item's text (about 300 tokens): a longer exchange is focused (focus)
SECTION = "sessions"
_MINIMAL = ("rank", "type", "id", "score", "title")
_SUMMARY = (*_MINIMAL, "kind", "trust", "posture", "time", "why", "flags")


def wanted(ws: Any, query: Any) -> bool:
    """Whether this query may return evidence."""
    from ee.sessions.store import present
    from ee.values import TRUST_CLASSES

    if not ws.config.get("sessions.search") or query.mode == "exact" or not query.text.strip():
        return False
    if not present(ws.root):
        return False
    if query.get("tags") or query.get("filters") or query.get("graph"):
        return False
    trust = query.get("trust") or {}
    lowest = trust.get("minClass")
    if lowest in TRUST_CLASSES and TRUST_CLASSES.index(lowest) < TRUST_CLASSES.index(TRUST):
        return False
    if TRUST in (trust.get("excludeClasses") or []):
        return False
    posture = trust.get("requirePosture")
    return not (posture and posture != "advisory")


def _floor(ws: Any, given: float | None) -> float:
    """Evidence's relevance floor: ``--min-relevance`` when given (it sets both kinds), else
    ``[sessions] min_relevance``. It is lower than the memories' because a question about a project's
    sessions shares their words whether they hold its answer or not: on the session dev set no floor keeps
    ≤ 3 % of answerable questions without a hit and drops the unanswerable ones, and answers win
    (0.02: 0.7 % of answerable questions without a hit, 4 % of unanswerable ones; 0.8, the memories'
    floor: 25 % and 44 %)."""
    return float(ws.config.get("sessions.min_relevance") if given is None else given)


def search_with_evidence(
    ws: Any, query: Any, data: dict[str, Any], view: Any, floor: float | None
) -> dict[str, Any]:
    """``data`` (a search answer over memories) with evidence merged in. A page starts where the pages
    before it stopped in both lists: its cursor holds how many memories and how many pieces of evidence
    they returned."""
    from ee.query.engine import count_tokens, encode_cursor
    from ee.sessions.search import merge

    fields = str(query.get("output.fields", "standard"))
    if not wanted(ws, query):
        data["hits"] = [_typed(h, "memory") for h in data["hits"]]
        return data
    offset, skipped = int(data.get("offset", 0)), query.evidence_offset()
    found, in_all = _evidence(ws, view, query, floor, query.limit, data["degraded"], skipped)
    if not in_all:
        data["hits"] = [_typed(h, "memory") for h in data["hits"]]
        return data
    _answered(data["degraded"])
    limit = query.limit
    merged = merge(data["hits"], found, limit, offset + skipped)
    budget = int(query.get("budget.maxTokens", 0) or 0)
    used, kept = 0, []
    for hit in merged:
        cost = count_tokens(hit.get("body", "") or hit["title"])
        if budget and used + cost > budget:
            break
        used += cost
        kept.append(hit)
    memories = offset + sum(1 for h in kept if h["type"] == "memory")
    evidence = skipped + sum(1 for h in kept if h["type"] == "evidence")
    more = memories < data["total"] or evidence < in_all
    data["hits"] = [_trim(h, fields) for h in kept]
    data["total"] += in_all
    data["offset"] = offset + skipped
    data["returned"] = len(kept)
    data["truncated"] = more
    if more and not data.get("truncated_reason"):
        data["truncated_reason"] = (
            "budget.maxTokens" if budget and len(kept) < len(merged) else "budget.maxResults"
        )
    if not more:
        data["truncated_reason"] = None
    data["next_cursor"] = encode_cursor(query.binding(), memories, evidence) if more else None
    return data


def _evidence(
    ws: Any,
    view: Any,
    query: Any,
    floor: float | None,
    limit: int | None,
    degraded: list[dict[str, Any]],
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """The query's evidence (``limit`` pieces after the first ``offset``) and how many there are in all;
    when the evidence store cannot be read, none, and a ``degraded`` entry (a search over memories never
    fails for it)."""
    from ee.errors import StorageError
    from ee.sessions.search import rank_evidence

    try:
        return rank_evidence(
            ws.root, view, query.text, query.pool, _floor(ws, floor), query.mode, limit, offset
        )
    except StorageError as exc:
        degraded.append(
            {
                "code": "sessions_unavailable",
                "severity": "warning",
                "message": f"session evidence left out: {exc.message}",
                "repair": exc.hint,
            }
        )
        return [], 0


def _typed(hit: dict[str, Any], kind: str) -> dict[str, Any]:
    return (
        {"rank": hit["rank"], "type": kind, **{k: v for k, v in hit.items() if k != "rank"}}
        if "rank" in hit
        else {"type": kind, **hit}
    )


def _trim(hit: dict[str, Any], fields: str) -> dict[str, Any]:
    hit = _typed(hit, hit.get("type", "memory"))
    if hit["type"] == "memory":
        if fields in ("minimal", "summary"):
            from ee.query.engine import MINIMAL_FIELDS, SUMMARY_FIELDS

            keys = ("type", *(MINIMAL_FIELDS if fields == "minimal" else SUMMARY_FIELDS), "explanation")
            return {k: hit[k] for k in hit if k in keys}
        return hit
    if fields == "minimal":
        return {k: hit[k] for k in hit if k in _MINIMAL}
    if fields == "summary":
        return {k: hit[k] for k in hit if k in _SUMMARY}
    return hit


def context_with_evidence(
    ws: Any, query: Any, quotas: dict[str, Any] | None, floor: float | None
) -> dict[str, Any]:
    """The context pack for ``query`` with its session evidence section."""
    from ee.pack import build_pack, max_tokens_of
    from ee.pack.pieces import block_piece, item_text, section_piece
    from ee.query import open_view
    from ee.query.engine import count_tokens

    if not wanted(ws, query):
        return build_pack(ws, query, quotas, min_relevance=floor)
    view, _reference = open_view(ws, None)
    problems: list[dict[str, Any]] = []
    found, _in_all = _evidence(ws, view, query, floor, None, problems)
    if not found:
        pack = build_pack(ws, query, quotas, min_relevance=floor)
        pack["degraded"] += problems
        return pack
    found = [dict(hit, rank=i + 1) for i, hit in enumerate(found)]
    max_tokens = max_tokens_of(query)
    heads = count_tokens(block_piece(False)) + count_tokens(section_piece(SECTION))
    texts = [_item_text(hit, query.text) for hit in found]
    costs = [
        count_tokens(item_text("evidence", t, h["id"], TRUST, 0.45))
        for t, h in zip(texts, found, strict=True)
    ]
    memories = build_pack(ws, query, quotas, min_relevance=floor)
    share = max_tokens if not memories["counts"]["items"] else int(max_tokens * EVIDENCE_SHARE)
    need = min(share, heads + sum(costs))
    if memories["counts"]["items"] and memories["budget"]["used_tokens"] > max_tokens - need:
        smaller = replace(query, doc=_with_budget(query.doc, max(max_tokens - need, 1)))
        memories = build_pack(ws, smaller, quotas, min_relevance=floor)
        memories["budget"]["max_tokens"] = max_tokens
    used = memories["budget"]["used_tokens"]
    if not memories["counts"]["items"] and memories["budget"]["title_tokens"] == 0:
        return memories
    room = max_tokens - used - heads
    explicit = query.get("budget.maxResults") if "maxResults" in (query.doc.get("budget") or {}) else None
    slots = int(explicit) - memories["counts"]["items"] if explicit is not None else len(found)
    items: list[dict[str, Any]] = []
    fields = str(query.get("output.fields", "standard"))
    for hit, text, cost in zip(found, texts, costs, strict=True):
        if len(items) >= slots or cost > room:
            continue
        if "quarantined" in hit["flags"]:
            continue
        room -= cost
        items.append(_pack_item(hit, text, cost, fields))
    if not items:
        return memories
    _answered(memories["degraded"])
    tokens = sum(i["tokens"] for i in items) if fields not in ("minimal",) else sum(costs[: len(items)])
    memories["sections"].append({"name": SECTION, "title": _title(), "tokens": tokens, "items": items})
    memories["budget"]["used_tokens"] = used + heads + tokens
    memories["counts"]["items"] += len(items)
    memories["counts"]["candidates"] += len(found)
    memories["pack_hash"] = _rehash(memories)
    return memories


def _answered(degraded: list[dict[str, Any]]) -> None:
    """Session evidence answers the query: the note that no memory does stays (it is true), but its
    repair is what to do with the evidence, not to rephrase a query that found it."""
    for note in degraded:
        if note.get("code") == "no_relevant_memories":
            note["repair"] = (
                "session evidence answers it: to keep what it says as a memory, accept its candidate "
                "(ee curate list) or ee remember it"
            )


def _with_budget(doc: dict[str, Any], tokens: int) -> dict[str, Any]:
    budget = dict(doc.get("budget") or {})
    budget["maxTokens"] = tokens
    return dict(doc, budget=budget)


def _title() -> str:
    from ee.pack.profiles import SECTION_TITLES

    return SECTION_TITLES[SECTION]


def _item_text(hit: dict[str, Any], task: str) -> str:
    """The evidence as the pack prints it: where it comes from, then what was said (:func:`focus`)."""
    prov = hit["provenance"]
    where = f"[session {prov['session_id']} · turn {prov['turn']} · {prov['time']} · {prov['file_name']}]"
    if hit.get("superseded_by"):
        where += f" (superseded by time by {hit['superseded_by']})"
    return f"{where}\n{focus(hit['body'], task)}"


def focus(body: str, task: str, limit: int = MAX_ITEM_CHARS) -> str:
    """A long exchange cut to what the task is about: its first line (what was asked), then the lines
    holding the task's terms, best first, in their order, within ``limit`` characters; what is left out
    is stated (``[…N lines cut]``). The whole exchange is one ``ee sessions show ID`` away."""
    if len(body) <= limit:
        return body
    from ee.index.tokenize import tokenize

    lines = body.splitlines()
    wanted = set(tokenize(task))
    scored = sorted(range(1, len(lines)), key=lambda i: (-len(wanted & set(tokenize(lines[i]))), i))
    keep = {0}
    size = len(lines[0])
    for i in scored:
        if not wanted & set(tokenize(lines[i])) or size + len(lines[i]) > limit:
            continue
        keep.add(i)
        size += len(lines[i]) + 1
    shown = [lines[i] if len(lines[i]) <= limit else lines[i][:limit] + " […]" for i in sorted(keep)]
    cut = len(lines) - len(keep)
    return "\n".join(shown) + (f"\n[…{cut} lines cut]" if cut else "")


def _pack_item(hit: dict[str, Any], text: str, cost: int, fields: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "evidence",
        "id": hit["id"],
        "section": SECTION,
        "authoritative": False,
        "title": hit["title"],
        "kind": "evidence",
        "trust": TRUST,
        "posture": "advisory",
        "confidence": 0.45,
        "score": hit["score"],
        "relevance": hit["relevance"],
        "rank": hit.get("rank", 1),
        "tokens": cost,
        "why": hit["why"],
        "flags": hit["flags"],
        "body": text,
        "provenance": hit["provenance"],
    }
    if hit.get("superseded_by"):
        item["superseded_by"] = hit["superseded_by"]
    if fields == "minimal":
        return {k: item[k] for k in ("type", "id", "section", "authoritative", "title")}
    if fields == "summary":
        return {k: v for k, v in item.items() if k not in ("body", "provenance")}
    return item


def _rehash(data: dict[str, Any]) -> str:
    import hashlib
    import json

    chosen = [
        {"id": i["id"], "section": s["name"], "body": i.get("body", i.get("title", ""))}
        for s in data["sections"]
        for i in s["items"]
    ]
    return "sha256:" + hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()
