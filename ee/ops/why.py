"""``ee why <id>``: why a memory stands where it does — in general, or for one query.

In general: its standing (prior and effective confidence, every feedback event and whether it was applied
or held back, utility, freshness with its half-life, trust and posture), its links in both directions, its
validity at the reference time, the injection guard's verdict, and a summary of its git history.
For a query (``--query TEXT``): its rank among the query's hits with every score component and factor, or
why it was not retrieved, and what a context pack under ``profile`` would do with it (its section, or the
reason it is omitted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ee.errors import NotFound

if TYPE_CHECKING:
    from ee.workspace import Workspace


def why(
    ws: Workspace,
    memory_id: str,
    query_text: str | None = None,
    *,
    as_of: str | None = None,
    profile: str = "balanced",
) -> dict[str, Any]:
    """The ``data`` of ``ee why`` (with ``degraded`` inside)."""
    from ee.policy.secrets import shown_path
    from ee.query import min_relevance, open_view
    from ee.query.document import from_arguments
    from ee.query.engine import prepare
    from ee.store.files import check_id, missing_hint

    check_id(memory_id)  # something that cannot be an id is a usage error, as for `ee memory show`
    query = from_arguments(query_text or memory_id, as_of=as_of, profile=profile)
    view, reference = open_view(ws, as_of)
    ctx = prepare(view, query, reference, bool(ws.config.get("redaction.allow_bypass")), min_relevance(ws))
    pos = view.gen.position(memory_id)
    if pos is None:
        where = f" as of {as_of}" if as_of else ""
        broken = sum(1 for note in view.degraded if note.get("code") == "memory_invalid")
        raise NotFound(f"no memory {memory_id} in the store{where}", missing_hint(broken))
    record = view.gen.records[pos]
    data: dict[str, Any] = {
        "id": memory_id,
        "title": _title(view, pos),
        "path": shown_path(record),
        "level": record["level"],
        "kind": record["kind"],
        "tags": record["tags"],
        "standing": standing_report(ctx, record),
        "links": links_report(view.gen, record),
        "injection": record.get("injection") or {"score": 0.0, "flagged": False, "signals": []},
        "history": {"as_of": view.commit} if view.commit else history_report(ws, memory_id, record["path"]),
        "query": query_report(ctx, pos, profile, ws) if query_text else None,
    }
    notes = []
    if not as_of:
        data["events_elsewhere"] = _events_elsewhere(ws, memory_id)
        notes = [
            {
                "code": "events_on_other_branch",
                "severity": "info",
                "message": f"{item['events']} feedback event(s) of {memory_id} are on {item['branch']} only: "
                "memories and their feedback follow the code branch, and count here once it merges",
                "repair": f"git merge {item['branch']}; or keep memories apart from code checkouts: "
                "ee init --branch ee/memories",
            }
            for item in data["events_elsewhere"]
        ]
    return data | {"degraded": [*query.notes, *ctx.degraded, *notes]}  # (a long query: shortened)


def _events_elsewhere(ws: Workspace, memory_id: str) -> list[dict[str, Any]]:
    from ee.git import memory_branch

    if memory_branch.worktree(ws.root) is not None:
        return []  # one memory branch: no checkout hides an event
    return memory_branch.events_elsewhere(ws.git, memory_id)


def _title(view: Any, pos: int) -> str:
    from ee.query.explain import title_of

    return title_of(view.gen.body(pos))


def standing_report(ctx: Any, record: dict[str, Any]) -> dict[str, Any]:
    from ee.index.provenance import writer_of
    from ee.policy.feedback import half_life_days
    from ee.query.engine import trust_of
    from ee.query.standing import standing_of, superseded_map

    events = ctx.view.state.get("events", {}).get(record["id"], [])
    prov = ctx.view.state.get("provenance", {}).get(record["path"])
    # (not every record decoded)
    superseded = superseded_map(ctx.view.gen.link_records(), trust_of(ctx)).get(record["id"])
    writer = writer_of(ctx.view.state, record["path"], record["id"])
    st = standing_of(record, events, prov, writer, ctx.now, ctx.reference, superseded)
    out = st.to_dict()
    out["utility"] = record.get("utility")
    out["importance"] = record.get("importance")
    out["created"] = st.created
    out["half_life_days"] = half_life_days(record["level"], record["kind"])
    out["last_confirmed"] = _time(st.feedback.last_confirmed)
    out["computed_at"] = _time(ctx.now)
    out["reference_time"] = _time(ctx.reference)
    out["valid_from"] = record.get("valid_from")
    out["valid_to"] = record.get("valid_to")
    out["multipliers"] = {k: round(v, 4) for k, v in st.multipliers().items()}
    out["events"] = events_report(events, st.feedback)
    return out


def events_report(events: list[dict[str, Any]], state: Any) -> list[dict[str, Any]]:
    """Every stored event with its status: applied, held_back (burst rule) or ignored (see notes)."""
    applied, held = set(state.applied), set(state.held_back)
    out = []
    for event in events:
        status = (
            "applied" if event.get("id") in applied else "held_back" if event.get("id") in held else "ignored"
        )
        out.append({k: event.get(k) for k in ("id", "signal", "at", "source", "reason")} | {"status": status})
    return out


def links_report(gen: Any, record: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Outbound links (from the frontmatter) and inbound ones (every other memory's links to this one)."""
    outbound = []
    for link_type, target in record.get("links", []):
        pos = gen.position(target)
        outbound.append(
            {"type": link_type, "to": target, "exists": pos is not None, "title": _gen_title(gen, pos)}
        )
    inbound = []
    for pos, other in enumerate(gen.records):
        for link_type, target in other.get("links", []):
            if target == record["id"]:
                inbound.append({"type": link_type, "from": other["id"], "title": _gen_title(gen, pos)})
    inbound.sort(key=lambda link: (link["from"], link["type"]))
    return {"outbound": outbound, "inbound": inbound}


def _gen_title(gen: Any, pos: int | None) -> str | None:
    if pos is None:
        return None
    from ee.query.explain import title_of

    return title_of(gen.body(pos))


def history_report(ws: Workspace, memory_id: str, path: str) -> dict[str, Any]:
    """A summary of the git history of the file at ``path`` (where the up-to-date index found the memory:
    no look through every file)."""
    from ee.ops.history import history

    try:
        versions = history(ws, memory_id, path)
    except NotFound:
        return {"versions": 0, "first": None, "last": None, "note": "not committed yet"}

    def brief(version: Any) -> dict[str, Any]:
        return {
            "commit": version.commit,
            "date": version.date,
            "actor": version.actor,
            "op": version.op,
            "changed": list(version.changed),
        }

    return {"versions": len(versions), "first": brief(versions[-1]), "last": brief(versions[0])}


def query_report(ctx: Any, pos: int, profile_name: str, ws: Workspace) -> dict[str, Any]:
    from ee.pack import choose
    from ee.pack.profiles import resolve_profile
    from ee.query.engine import echoed, rank, split_at_floor
    from ee.query.explain import hit_dict, relevance_of

    everything = rank(ctx)[0]
    ranked, dropped = split_at_floor(ctx, everything)
    out: dict[str, Any] = {"text": echoed(ctx.query.text), "total": len(ranked)}
    below = next((s for s in dropped if s.pos == pos), None)
    if below is not None:  # retrieved, but not relevant enough to be an answer
        relevance = relevance_of(ctx, below)
        reason = f"relevance {relevance['value']:.4f} is below the floor {ctx.floor:g}"
        return out | {
            "rank": None,
            "retrieved": True,
            "relevance": relevance,
            "reason": reason,
            "pack": {"profile": profile_name, "selected": False, "reason": "below_relevance_floor"},
        }
    place = next((i for i, s in enumerate(ranked) if s.pos == pos), None)
    if place is None:
        return out | {"rank": None, "retrieved": False, "reason": _not_retrieved(ctx, pos), "pack": None}
    hit = hit_dict(ctx, ranked[place], place + 1)
    out |= {
        "rank": place + 1,
        "retrieved": True,
        "score": hit["score"],
        "why": hit["why"],
        "components": hit["components"],
        "factors": hit["factors"],
        "flags": hit["flags"],
        "relevance": relevance_of(ctx, ranked[place]),
    }
    if place > 0:
        above = ranked[place - 1]
        out["next_above"] = {"id": ctx.view.gen.records[above.pos]["id"], "score": round(above.final, 6)}
    profile = resolve_profile(profile_name, ws.config.section("pack.custom"))
    chosen, cands, _kind, _budget = choose(ctx, everything, profile)
    out["pack"] = _pack_decision(profile_name, chosen, cands, pos)
    return out


def _pack_decision(profile: str, chosen: list[Any], cands: list[Any], pos: int) -> dict[str, Any]:
    mine = next((c for c in cands if c.pos == pos), None)
    if mine is None:
        return {"profile": profile, "selected": False, "reason": "beyond the candidate pool"}
    if any(c.pos == pos for c in chosen):
        return {
            "profile": profile,
            "selected": True,
            "section": mine.section,
            "authoritative": mine.authoritative,
            "tokens": mine.cost,
            "truncated": mine.truncated,
            "selection": mine.trace,
        }
    reason, _, detail = (mine.reason or "budget").partition(":")
    out = {"profile": profile, "selected": False, "section": mine.section, "reason": reason}
    if mine.duplicate_of:
        out["duplicate_of"] = mine.duplicate_of
    if detail:
        out["detail"] = f"{detail} share used up"
    return out


def _not_retrieved(ctx: Any, pos: int) -> str:
    """Why neither arm brought the memory in (``why``'s query has no tags or filters)."""
    from ee.index.tokenize import tokenize

    gen = ctx.view.gen
    lexical = float(gen.lexical.scores(tokenize(ctx.query.text))[pos])
    parts = [f"lexical score {lexical:.4f}" if lexical > 0 else "no query term matches"]
    vector = ctx.view.query_vector(ctx.query.text) if ctx.query.mode in ("hybrid", "semantic") else None
    if vector is not None and gen.vectors is not None:
        cosine = float(ctx.view.cosines(vector)[pos])  # (as the search computed it)
        parts.append(f"cosine {cosine:.4f}")
    return ", ".join(parts) + f": outside the top {ctx.query.pool} of each retrieval arm"


def _time(value: Any) -> str | None:
    from ee.store.ids import format_time

    return format_time(value) if value is not None else None
