"""Context packs: ranked hits → a budgeted, sectioned, explained pack an agent pastes into its prompt.

``ee context "<task>"`` runs the query engine (ee.query.engine.rank, the same ranking as ``ee search``),
takes the best candidates (at most ``budget.candidatePool``; those below the calibrated relevance floor,
``[query] min_relevance``, are listed in ``omitted`` as ``below_relevance_floor``), and fills five
sections — procedural rules (rule, convention, command, playbook-step, preference), decisions, failures
(failure, anti-pattern, risk), evidence (fact, observation, question, and any kind ee does not know) and
artifacts — under the profile's quotas, choosing for diversity as well as relevance (ee.pack.select).

**Profiles** (shares are caps on each section's part of the item budget; see ee.pack.profiles):

==============  ==========================================================  ==========================
profile         for                                                         procedural/decisions/
                                                                            failures/evidence/artifacts
==============  ==========================================================  ==========================
compact         tight prompts and hooks: rules and known failures, items    .45 .15 .30 .10 0;
                ≤ 120 tokens, advisory ≤ 30 %, no spill                    MMR λ 0.75
balanced        the default: every section represented, items ≤ 300         .35 .20 .20 .15 .10;
                tokens, spill                                               MMR λ 0.7
grounding       checking facts before acting: evidence and decisions        .15 .25 .10 .40 .10;
                first, advisory ≤ 25 %, items ≤ 400 tokens                  MMR λ 0.8
orientation     getting to know an area: conventions, decisions,            .30 .30 .10 .15 .15;
                artifacts; items ≤ 150 tokens                               MMR λ 0.5
wide            breadth: as many distinct memories as fit, items ≤ 80       .25 each;
                tokens                                                      MMR λ 0.4
thorough        deep work: items ≤ 1,200 tokens kept whole                  .30 .20 .25 .25 .15;
                                                                            MMR λ 0.85
submodular      the set that best covers the candidate pool: facility       as balanced;
                location, lazy greedy by gain per √tokens                   facility location
custom          quotas from ``[pack.custom]`` in .ee/config.toml, then       any, over a base profile
                ``output.quotas`` of the query document or ``--quota``
==============  ==========================================================  ==========================

**Token rule.** Every count uses ``ee.query.engine.count_tokens`` (⌈UTF-8 bytes / 4⌉). The pack's budget
covers exactly the Markdown pack that ``--format markdown`` prints and ``--format hook`` injects, counted
piece by piece: the title line, each block heading (authoritative / advisory) and section heading in use,
and each item's text (``ee.pack.pieces.item_text``: kind, body, id, trust class, effective
confidence). ``used_tokens`` is that sum and never exceeds ``max_tokens`` (a sum of ceilings bounds the
ceiling of the sum, so the whole Markdown counts no more). The JSON forms carry the same bodies plus
metadata the budget does not count. A budget smaller than the title line gives an empty pack with an
empty Markdown (``title_tokens`` 0).

**Bodies** are kept whole up to the profile's ``max_item_tokens`` (and the room the budget has at all);
a longer body is cut at a word boundary, marked `` […]``, and the item says ``truncated: true``
(``ee memory show <id>`` has the rest). A candidate is never cut to squeeze into what is left of the budget:
it is omitted for ``budget`` and a shorter one may take the room.

**Authority.** Items from trust classes with an authoritative posture (human_explicit,
peer_human_attested, agent_validated) are ``authoritative: true`` and printed under "Authoritative";
the rest under "Advisory", which the Markdown labels as agent-written or imported. Memories the
injection guard flagged (instruction-like text from a non-human source) are **never** put in a pack:
they are listed in ``omitted`` with the reason ``quarantined`` (``ee why`` and ``ee search`` still show
them, flagged). Memories outside their validity window at the reference time are omitted as
``invalid_at_reference_time`` (unless ``temporalValidity.posture`` is ``ignore``; ``strict`` drops them
before ranking).

**Pack hash.** ``sha256:`` over the canonical JSON of the chosen items in order (id, section, authority,
body as shown, blob id): the same store, query and profile give the same hash in any process and format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.pack.profiles import Profile
    from ee.query.document import Query
    from ee.workspace import Workspace

DEFAULT_MAX_TOKENS = 4000
COUNTING = "ceil(UTF-8 bytes / 4) per piece of the Markdown pack: title, headings in use, each item's text"


def build_pack(
    ws: Workspace,
    query: Query,
    quotas: dict[str, Any] | None = None,
    quota_source: str = "--quota",
    min_relevance: float | None = None,
) -> dict[str, Any]:
    """The context pack for ``query`` (the ``data`` of the response, with ``degraded`` inside).

    ``quotas`` (the CLI's ``--quota`` pairs) override the query document's ``output.quotas``, which
    override ``[pack.custom]``; they apply to the ``custom`` profile only. ``min_relevance`` overrides
    the workspace's relevance floor (``[query] min_relevance``).
    """
    from ee.pack.profiles import resolve_profile
    from ee.query import min_relevance as floor_of
    from ee.query import open_view

    name = str(query.get("output.profile", "balanced"))
    document = quotas if quotas else query.get("output.quotas")
    where = quota_source if quotas else "output.quotas"
    profile = resolve_profile(name, ws.config.section("pack.custom"), document, where)
    view, reference = open_view(ws, query.get("asOf"))
    allow_bypass = bool(ws.config.get("redaction.allow_bypass"))
    return pack_view(view, query, profile, reference, allow_bypass, floor_of(ws, min_relevance))


def max_tokens_of(query: Query) -> int:
    return int(query.get("budget.maxTokens") or DEFAULT_MAX_TOKENS)


def pack_view(
    view: Any,
    query: Query,
    profile: Profile,
    reference: Any = None,
    allow_bypass: bool = False,
    min_relevance: float | None = None,
) -> dict[str, Any]:
    """The pack over one index view (the working tree, or a past commit)."""
    from ee.query.engine import echoed, note_nothing_relevant, prepare, query_block, rank, split_at_floor

    ctx = prepare(view, query, reference, allow_bypass, min_relevance)
    ranked, _total = rank(ctx)
    note_nothing_relevant(ctx, *split_at_floor(ctx, ranked))
    chosen, cands, similarity, budget = choose(ctx, ranked, profile)
    head = {"task": echoed(query.text), "query": query_block(ctx)}
    return (
        head | assemble(ctx, ranked, profile, chosen, cands, similarity, budget) | {"degraded": ctx.degraded}
    )


def choose(ctx: Any, ranked: list[Any], profile: Profile) -> tuple[list[Any], list[Any], str, Any]:
    """(chosen candidates, all candidates, similarity kind, budget) for the ranked hits."""
    from ee.pack.items import candidates
    from ee.pack.pieces import block_piece, section_piece, title_piece
    from ee.pack.profiles import SECTIONS
    from ee.pack.select import Budget, select
    from ee.pack.similarity import similarity
    from ee.query.engine import count_tokens

    query = ctx.query
    max_tokens = max_tokens_of(query)
    blocks = {a: count_tokens(block_piece(a)) for a in (True, False)}
    headings = {(a, s): count_tokens(section_piece(s)) for a in (True, False) for s in SECTIONS}
    title = count_tokens(title_piece(query.text))
    title = title if title <= max_tokens else 0  # a budget below the title line: an empty pack, no title
    explicit_max = query.get("budget.maxResults") if "maxResults" in (query.doc.get("budget") or {}) else None
    budget = Budget.plan(max_tokens, title, profile, blocks, headings, explicit_max)
    widest = max(headings.values())
    room = {a: max_tokens - title - blocks[a] - widest for a in (True, False)}
    cands = candidates(
        ctx, ranked, profile, query.pool, room, None if profile.spill else budget.section_limit
    )
    sim, kind = similarity(ctx.view.gen, [c.pos for c in cands], [c.body for c in cands])
    chosen = select(cands, sim, kind, profile, budget)
    return chosen, cands, kind, budget


def assemble(
    ctx: Any,
    ranked: list[Any],
    profile: Profile,
    chosen: list[Any],
    cands: list[Any],
    similarity: str,
    budget: Any,
) -> dict[str, Any]:
    from ee.pack.items import REASONS, item_dict, omitted_dict, pack_hash, trim, trim_omitted
    from ee.pack.profiles import SECTION_TITLES, SECTIONS

    query = ctx.query
    fields = str(query.get("output.fields", "standard"))
    explain = bool(query.get("output.explain"))
    by_index = {c.index: ranked[c.index] for c in cands}
    ordered = sorted(chosen, key=lambda c: (SECTIONS.index(c.section), c.index))
    full = [item_dict(ctx, c, by_index[c.index], c.index + 1, explain) for c in ordered]
    sections = []
    for name in SECTIONS:
        items = [i for i in full if i["section"] == name]
        if items:
            sections.append(
                {
                    "name": name,
                    "title": SECTION_TITLES[name],
                    "tokens": sum(i["tokens"] for i in items),
                    "items": [trim(i, fields) for i in items],
                }
            )
    taken = {c.index for c in chosen}
    omitted = [omitted_dict(ctx, c, by_index[c.index]) for c in cands if c.index not in taken]
    by_reason = {r: n for r in REASONS if (n := sum(1 for o in omitted if o["reason"] == r))}
    return {
        "profile": profile.to_dict(),
        "fields": fields,
        "budget": {
            "max_tokens": budget.max_tokens,
            "used_tokens": budget.used,
            "title_tokens": budget.title,
            "counting": COUNTING,
        },
        "min_relevance": ctx.floor,
        "similarity": similarity,
        "pack_hash": pack_hash(full),
        "counts": {
            "candidates": len(cands),
            "items": len(full),
            "omitted": len(omitted),
            "omitted_by_reason": by_reason,
        },
        "sections": sections,
        "omitted": [trim_omitted(o, fields) for o in omitted],
    }
