"""A ranked memory as the JSON a hit carries: components, factors, provenance and a one-line why."""

from __future__ import annotations

from typing import Any

from ee.index.tokenize import tokenize
from ee.model import title_of
from ee.policy.secrets import shown_path
from ee.values import KNOWN_KEYS

# A hit's ``memory`` block (``output.fields: full``; ``ee why`` and a pack item keep it too): the frontmatter
# keys ee knows that the hit does not show itself, in the order ee writes them (ee.values.KNOWN_KEYS), then
# the unknown keys a file keeps.
_SHOWN_BY_HIT = ("id", "level", "kind", "tags", "trust")
MEMORY_KEYS = (*(key for key in KNOWN_KEYS if key not in _SHOWN_BY_HIT), "extra")


def provenance_of(ctx: Any, record: dict[str, Any]) -> dict[str, Any]:
    prov = ctx.view.state.get("provenance", {}).get(record["path"])
    path = shown_path(record)
    out: dict[str, Any] = {"path": path, "blob": record["blob"], "committed": record["committed"]}
    if prov and record["committed"]:  # (author, subject and actor masked by ee.index.provenance)
        commit, date, author, subject, actor = prov[:5]
        out.update({"commit": commit, "author": author, "date": date, "message": subject, "actor": actor})
    elif ctx.view.commit:
        out["commit"] = ctx.view.commit
    else:
        out.update({"commit": None, "note": "uncommitted working-tree version"})
    return out


def body_for(ctx: Any, pos: int, record: dict[str, Any]) -> str:
    """The body as output may show it: secrets masked unless the query's redaction policy lets them out."""
    body: str = ctx.view.gen.body(pos)
    secrets = set(record.get("secrets", ()))
    if not secrets:
        return body
    policy = ctx.query.get("redaction.policy", "respect")
    allowed = set(ctx.query.get("redaction.allowCategories") or [])
    if policy != "bypass" and not (secrets & allowed):
        return body
    raw = _raw_body(ctx, record)
    if raw is None:
        return body
    from ee.policy.secrets import find_secrets, redact

    keep_masked = [] if policy == "bypass" else [f for f in find_secrets(raw) if f.cls not in allowed]
    return redact(raw, keep_masked) if keep_masked else raw


def _raw_body(ctx: Any, record: dict[str, Any]) -> str | None:
    from ee.errors import EeError
    from ee.store import frontmatter

    try:
        if ctx.view.commit:
            data = ctx.view.read_blob(record["blob"])
        else:
            data = (ctx.view.root / record["path"]).read_bytes()
        return frontmatter.parse(frontmatter.decode(data, record["path"]), record["path"])[0].body
    except (OSError, EeError, AttributeError):
        return None


def hit_dict(ctx: Any, item: Any, rank: int, memory: bool = True) -> dict[str, Any]:
    """One hit as a response writes it; ``memory`` False leaves out the ``memory`` block (the last key),
    which every output-fields choice but "full" drops anyway."""
    gen = ctx.view.gen
    record = gen.records[item.pos]
    body = body_for(ctx, item.pos, record)
    st = item.standing
    flags = _flags(record, st)
    components: dict[str, Any] = {
        "lexical": {"score": round(item.lexical[0], 6), "rank": item.lexical[1]} if item.lexical else None,
        "semantic": {"score": round(item.semantic[0], 6), "rank": item.semantic[1]}
        if item.semantic
        else None,
        "lexical_norm": round(item.lexical_norm, 6),
        "semantic_norm": round(item.semantic_norm, 6),
        "fused": round(item.fused, 6),
    }
    if item.exact:
        components["exact"] = True
    if item.hops is not None:
        components["graph_hops"] = item.hops
    factors = {
        "confidence": {
            "value": round(st.effective, 4),
            "multiplier": round(item.multipliers["confidence"], 4),
        },
        "freshness": {"value": round(st.freshness, 4), "multiplier": round(item.multipliers["freshness"], 4)},
        "trust": {
            "value": st.trust,
            "posture": st.posture,
            "multiplier": round(item.multipliers["trust"], 4),
        },
        "validity": {"value": st.validity_reason, "multiplier": round(item.multipliers["validity"], 4)},
    }
    hit: dict[str, Any] = {
        "rank": rank,
        "id": record["id"],
        "score": round(item.final, 6),
        "relevance": None if item.relevance is None else round(item.relevance, 4),
        "title": title_of(body),
        "level": record["level"],
        "kind": record["kind"],
        "tags": record["tags"],
        "trust": st.trust,
        "posture": st.posture,
        "path": shown_path(record),
        "why": why(ctx, item, record),
        "flags": flags,
        "body": body,
        "components": components,
        "factors": factors,
        "provenance": provenance_of(ctx, record),
    }
    if ctx.query.get("output.explain"):
        hit["explanation"] = explanation(ctx, item, record, body)
    if memory:
        hit["memory"] = _memory_fields(record, st)
    return hit


def _flags(record: dict[str, Any], st: Any) -> list[str]:
    flags = []
    if st.quarantined:
        flags.append("quarantined")
    elif (record.get("injection") or {}).get("flagged"):
        # the guard reads every memory: a person's instruction-like text is shown as such, not quarantined
        flags.append("instruction_like")
    if not st.valid:
        flags.append("superseded" if st.validity_reason.startswith("superseded") else "outside_validity")
    if record.get("secrets"):
        flags.append("secret_masked")
    if record.get("conflict"):
        flags.append("conflicted")
    if not record.get("committed"):
        flags.append("uncommitted")
    return flags


def why(ctx: Any, item: Any, record: dict[str, Any]) -> str:
    parts = []
    if item.exact:
        parts.append("contains the exact phrase")
    if item.lexical:
        terms = matched_terms_at(ctx, item.pos, record)
        shown = ", ".join(terms[:4]) if terms else "query terms"
        parts.append(f"lexical #{item.lexical[1]} ({shown})")
    if item.semantic:
        parts.append(f"semantic #{item.semantic[1]} (cosine {item.semantic[0]:.2f})")
    if item.hops is not None:
        parts.append(f"{item.hops} link hop(s) from a seed")
    if item.relevance is not None and ctx.floor > 0:
        from ee.query.relevance import below_floor

        parts.append(
            f"relevance {item.relevance:.2f} < floor {ctx.floor:g}"
            if below_floor(ctx.floor, item.relevance)
            else f"relevance {item.relevance:.2f} ≥ floor {ctx.floor:g}"
        )
        aside = item.evidence[0].set_aside_for(item.evidence[1]) if item.evidence is not None else []
        if aside:
            parts[-1] += f" (store-wide words set aside: {', '.join(aside)})"
    st = item.standing
    standing = f"{record['level']} {record['kind']}, {st.trust}"
    if st.quarantined:
        standing += ", quarantined"
    if not st.valid:
        standing += f", {st.validity_reason}"
    return "; ".join([*parts, standing])


def matched_terms_at(ctx: Any, pos: int, record: dict[str, Any]) -> list[str]:
    """:func:`matched_terms` for the memory at ``pos``, read from the lexical index's postings instead of
    tokenising its body again (that was half the time of a search: 100 bodies per query).

    The index holds the tokens of the body, tags, kind and code paths; ``matched_terms`` looks at body,
    tags and kind only. For a memory with paths, a word whose tokens are also among its paths' tokens may
    have been found in a path alone: that memory takes the slow path (as does one with secrets, whose
    shown body may differ), and the answer is the same either way.
    """
    gen = ctx.view.gen
    if record.get("secrets") or gen.lexical is None:
        return matched_terms(ctx.query.text, gen.body(pos), record)
    words = ctx.memo.get("words")
    if words is None:
        words = ctx.memo["words"] = _word_masks(ctx.query.text, gen.lexical)
    in_paths = set(tokenize(" ".join(record["paths"]))) if record.get("paths") else None
    out: list[str] = []
    for shown, tokens, mask in words:
        if mask[pos] and shown not in out:
            if in_paths is not None and not in_paths.isdisjoint(tokens):
                return matched_terms(ctx.query.text, gen.body(pos), record)
            out.append(shown)
    return out


def _word_masks(query: str, lexical: Any) -> list[tuple[str, list[str], Any]]:
    """Each query word (as shown), its tokens, and the positions holding any of them as a boolean mask."""
    import numpy as np

    out = []
    for word in query.split():
        tokens = tokenize(word)
        columns = [c for t in tokens if (c := lexical.vocab.get(t)) is not None]
        mask = np.zeros(lexical.n_docs, dtype=bool)
        for column in columns:
            if column + 1 < len(lexical.indptr):
                mask[lexical.indices[int(lexical.indptr[column]) : int(lexical.indptr[column + 1])]] = True
        out.append((word.strip(".,;:!?()[]{}\"'`").lower(), tokens, mask))
    return out


def matched_terms(query: str, body: str, record: dict[str, Any]) -> list[str]:
    """The query's words (as typed, lower-cased) whose tokens occur in the memory."""
    have = set(tokenize(body)) | set(tokenize(" ".join(record.get("tags", ())) + " " + record["kind"]))
    return words_holding(query, have)


def words_holding(query: str, have: set[str]) -> list[str]:
    """The query's words (as typed, lower-cased) with a token in ``have``: what a why names, never the
    index's stems ("packages", not "packag")."""
    out: list[str] = []
    for word in query.split():
        tokens = tokenize(word)
        shown = word.strip(".,;:!?()[]{}\"'`").lower()
        if tokens and any(t in have for t in tokens) and shown not in out:
            out.append(shown)
    return out


def explanation(ctx: Any, item: Any, record: dict[str, Any], body: str) -> dict[str, Any]:
    st = item.standing
    return {
        "matched_terms": matched_terms(ctx.query.text, body, record),
        "standing": st.to_dict(),
        "final": f"{item.fused:.6f} fused × "
        + " × ".join(f"{name} {value:.4f}" for name, value in item.multipliers.items())
        + f" = {item.final:.6f}",
        "injection": record.get("injection"),
        "relevance": relevance_of(ctx, item),
    }


def relevance_of(ctx: Any, item: Any) -> dict[str, Any]:
    """The calibrated relevance of a hit, what it is made of, and how it stands against the floor."""
    if item.evidence is not None:
        found, index = item.evidence
        out: dict[str, Any] = found.explain(index, ctx.floor)
        return out
    value = item.relevance
    basis = "an exact phrase match" if item.exact else "reached through graph links only: no text evidence"
    return {
        "value": value,
        "coverage": 1.0 if item.exact else 0.0,
        "matched_terms": [],
        "query_terms": [],
        "floor": ctx.floor,
        "passed": True,
        "basis": basis,
    }


def _memory_fields(record: dict[str, Any], st: Any) -> dict[str, Any]:
    """The hit's ``memory`` block (:data:`MEMORY_KEYS`, then the effective confidence)."""
    out = {k: record.get(k) for k in MEMORY_KEYS}
    out["links"] = [{"type": t, "to": to} for t, to in record.get("links", [])]
    out["created"] = st.created
    out["effective_confidence"] = round(st.effective, 4)
    return out
