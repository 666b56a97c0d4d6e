"""Search results and context packs in every output format: human, json, jsonl, compact, markdown,
toon and hook. Renderers take the response data and return text; they never read files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ee.render import dumps, envelope, masked_degradations
from ee.results.search import Hit, SearchResult

if TYPE_CHECKING:  # (a search's answer does not build the pack types: an answer is one or the other)
    from ee.results.pack import Pack, PackItem

HOOK_EVENT_ENV = "EE_HOOK_EVENT"


def render(result: SearchResult | Pack, fmt: str, *, indent: int | None = 2) -> str:
    """A search's or a pack's answer in ``fmt``; the text ends with a newline, unless it is empty (the
    ``hook`` format of an empty answer: nothing at all is injected). ``indent`` is the ``json`` format's
    (None: the envelope on one line)."""
    data, degraded = result.envelope_parts()
    if fmt == "json":
        return dumps(envelope(data, degraded), indent=indent) + "\n"
    degraded = masked_degradations(degraded)  # as envelope masks the JSON's
    text = _RENDERERS[fmt](result, degraded)
    if not text and fmt == "hook":
        return text
    if fmt in _TEXT_FORMATS:
        from ee.policy.shown import visible  # (the text formats' only: JSON is escaped already)

        text = visible(text)
    return text if text.endswith("\n") else text + "\n"


_TEXT_FORMATS = ("human", "markdown", "compact", "toon")  # (jsonl and hook are JSON: escaped already)


def kind_of(result: SearchResult | Pack) -> str:
    """ "search" or "context": the command whose answer ``result`` is."""
    return "search" if isinstance(result, SearchResult) else "context"


def items_of(result: SearchResult | Pack) -> tuple[Hit | PackItem, ...]:
    return result.hits if isinstance(result, SearchResult) else result.items


def _item_line(item: Hit | PackItem) -> dict[str, Any]:
    data = item.to_json()
    if "type" not in data:
        return {"type": "item", **data}
    return {"type": "item", "item_type": data["type"], **{k: v for k, v in data.items() if k != "type"}}


def _jsonl(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    """A header line, one line per hit / pack item, a footer line (each a JSON object with a ``type``)."""
    kind = kind_of(result)
    data, _degraded = result.envelope_parts()
    items = items_of(result)
    header = {"type": "header", "schema": "ee.response.v1", "kind": kind}
    # A pack's omitted candidates go to the footer; a search's "omitted" (what the relevance floor
    # dropped, a count per reason) stays in the header with the other totals.
    header |= {
        k: v for k, v in data.items() if k not in ("hits", "sections") and (k, kind) != ("omitted", "context")
    }
    lines = [dumps(header, indent=None)]
    # (an item's own ``type``, memory or evidence, is its ``item_type`` here: ``type`` names the line)
    lines += [dumps(_item_line(item), indent=None) for item in items]
    footer: dict[str, Any] = {"type": "footer", "count": len(items), "degraded": degraded}
    if kind == "context":
        footer["omitted"] = data.get("omitted", [])
        footer["pack_hash"] = data.get("pack_hash")
    lines.append(dumps(footer, indent=None))
    return "\n".join(lines)


# --- the token-saving formats (compact, toon): what an agent reads of each item, not the envelope

BRIEF_TEXT_CHARS = 90  # compact's one-line text


def brief_items(result: SearchResult | Pack) -> list[dict[str, Any]]:
    """Each hit / pack item as an agent reads it: id, where it belongs (rank, or section and posture),
    kind, its text (the body, else its title), a short why and its provenance in brief. Only what the
    item carries (``--fields minimal`` carries no why)."""
    from ee.pack.pieces import body_text  # (the compact and toon formats' only: a JSON read needs no pack)

    out = []
    for item in items_of(result):
        row: dict[str, Any] = {"id": item.id}
        if isinstance(item, Hit):
            row["rank"] = item.rank
        row["kind"] = item.kind
        row["text"] = body_text(item.body or "") or item.title
        row["why"] = short_why(item)
        row["source"] = short_provenance(item)
        if item.explanation or (not isinstance(item, Hit) and item.selection):  # (only with --explain)
            from ee.render.pack_text import explain_lines  # (the text formats' only: JSON needs none)

            row["explain"] = "; ".join(line.strip() for line in explain_lines(item, ""))
        out.append(row)
    return out


def short_why(item: Hit | PackItem) -> str:
    """The retrieval arm that ranked the item best (``lexical #4``), a link hop, and its flags; the first
    clause of its why when it has no components."""
    components = item.components or {}
    ranks = [(components[arm]["rank"], arm) for arm in ("lexical", "semantic") if components.get(arm)]
    parts = [f"{arm} #{rank}" for rank, arm in sorted(ranks)[:1]]
    if components.get("graph_hops"):
        parts.append(f"linked ({components['graph_hops']} hop)")
    if not parts and item.why:
        parts.append(item.why.split(";")[0])
    parts += item.flags
    return " ".join(parts)


def short_provenance(item: Hit | PackItem) -> str:
    """Who wrote it and when, in a few words: ``human 2026-12-02`` (``uncommitted`` for a working-tree
    edit); its trust class when provenance is not in the fields."""
    provenance = item.provenance
    if not provenance:
        return item.trust
    if "session_id" in provenance:  # session evidence: where it was said
        day = str(provenance.get("time") or "")[:10]
        return f"{provenance.get('file_name', '')} turn {provenance.get('turn')} {day}"
    if not provenance.get("committed", True):
        return "uncommitted"
    who = provenance.get("actor") or provenance.get("author") or ""
    return f"{who} {str(provenance.get('date') or '')[:10]}".strip()


def nothing_found(result: SearchResult | Pack) -> str:
    """The one sentence every text format says when an answer holds no item (so an agent can tell "ee ran
    and found nothing" from a failure): why, with the counts."""
    if isinstance(result, SearchResult):
        below = sum(o.count or 0 for o in result.omitted if o.reason == "below_relevance_floor")
        other = sum(o.count or 0 for o in result.omitted) - below
        what, place = "matches this query", "query"
    else:
        below = result.counts.omitted_by_reason.get("below_relevance_floor", 0)
        other = result.counts.omitted - below
        what, place = "is relevant to this task", "task"
    reasons = []
    if below:
        reasons.append(f"{below:,} below the relevance floor {result.min_relevance or 0:g}")
    if other:
        reasons.append(f"{other:,} left out by the {'filters' if place == 'query' else 'budget'}")
    if not reasons:
        reasons.append(f"no memory shares a word or a meaning with the {place}")
    return f"No memory {what} ({'; '.join(reasons)})."


def _headline(result: SearchResult | Pack, count: int) -> str:
    if isinstance(result, SearchResult):
        text = _one_line(result.query.get("text", ""))
        head = f"ee search: {text} ({count} of {result.total})"
        if result.truncated:
            head += f", cut by {result.truncated_reason}"
        return head
    budget = result.budget
    return (
        f"ee context: {_one_line(result.task)} ({count} items, "
        f"{budget.used_tokens}/{budget.max_tokens} tokens)"
    )


def _compact(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    """A headline, then one line per item: ``id kind: text… [why; source]``, a pack's items under their
    section (advisory ones marked): about a third of the Markdown's tokens."""
    rows = brief_items(result)
    lines = [_headline(result, len(rows))]
    section = None
    for row, item in zip(rows, items_of(result), strict=True):
        advisory = not isinstance(item, Hit) and not item.authoritative
        if not isinstance(item, Hit) and item.section != section:
            from ee.pack.profiles import SECTION_TITLES  # (a pack's only: a search has no sections)

            section = item.section
            lines.append(f"## {SECTION_TITLES.get(section, section)}")
        rank = f"{row['rank']}. " if row.get("rank") is not None else ""
        kind_of = f"{row['kind']}: " if row["kind"] else ""
        note = "; ".join(x for x in (row["why"], row["source"], row.get("explain")) if x)
        mark = " (advisory)" if advisory else ""
        text = _one_line(row["text"], BRIEF_TEXT_CHARS)
        lines.append(f"{rank}{row['id']} {kind_of}{text}{mark}" + (f" [{note}]" if note else ""))
    if not rows:
        lines.append(nothing_found(result))
    return "\n".join(lines)


def _toon(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    """TOON (tab-delimited: bodies keep their commas unquoted) of the brief items: a pack's by section,
    the advisory ones (agent-written, imported) under ``advisory``; the omitted candidates counted by
    reason."""
    import toon_format

    rows = brief_items(result)
    doc: dict[str, Any]
    if isinstance(result, SearchResult):
        doc = {"query": result.query.get("text", ""), "total": result.total, "hits": rows}
        if result.truncated:
            doc["truncated"] = result.truncated_reason or True
        if result.next_cursor:
            doc["next_cursor"] = result.next_cursor
    else:
        doc = {"task": result.task, "tokens": f"{result.budget.used_tokens}/{result.budget.max_tokens}"}
        by_id = {row["id"]: row for row in rows}
        from ee.render.pack_text import blocks

        for authoritative, sections in blocks(result):
            rows_of = {section: [by_id[item.id] for item in items] for section, items in sections}
            if authoritative:
                doc |= rows_of  # authoritative items by section, advisory ones apart
            else:
                doc["advisory"] = rows_of
        if result.counts.omitted_by_reason:
            doc["omitted"] = result.counts.omitted_by_reason
    if not rows:
        doc["found"] = nothing_found(result)
    if degraded:
        doc["degraded"] = [d.get("message", "") for d in degraded]
    return str(toon_format.encode(doc, delimiter="\t"))


def _human(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    if not isinstance(result, SearchResult):
        from ee.render.pack_text import pack_human

        return pack_human(result)
    from ee.render.pack_text import explain_lines  # (as every text format: JSON needs none of it)

    lines = [] if result.hits else [nothing_found(result)]
    for hit in result.hits:
        tags = f" [{', '.join(hit.tags)}]" if hit.tags else ""
        flags = f"  ({', '.join(hit.flags)})" if hit.flags else ""
        lines.append(f"{hit.rank:>3}. {hit.title}{flags}")
        meta = f"{hit.id}  {_kind_of(hit)}{tags}  score {hit.score:.4f}"
        lines.append(f"     {meta}")
        if hit.why:
            lines.append(f"     why: {hit.why}")
        lines += explain_lines(hit, "     ")
    lines += _nearest_lines(result)
    if result.next_cursor:
        rest = result.total - result.offset - result.returned
        by = result.truncated_reason or "budget.maxResults"
        raise_it = "raise --limit" if by != "budget.maxTokens" else "raise budget.maxTokens"
        lines.append(
            f"… {rest} more: cut by {by} ({raise_it}, or page with pagination.cursor {result.next_cursor})"
        )
    return "\n".join(lines)


def _nearest_lines(result: SearchResult) -> list[str]:
    """With --explain: the dropped hits nearest the relevance floor, each with its evidence."""
    from ee.render.pack_text import relevance_evidence

    lines = []
    for entry in result.omitted:
        for near in entry.nearest:
            lines.append(
                f"  below the floor {result.min_relevance:g}: {near['id']}  relevance "
                f"{near['relevance']:.2f} ({relevance_evidence(near['explanation'])})"
            )
    return lines


def _kind_of(hit: Hit) -> str:
    """``level/kind`` of a memory hit; ``session evidence · file turn N`` of an evidence hit."""
    if hit.type == "evidence":
        return f"session evidence · {short_provenance(hit)}".rstrip(" ·")
    return f"{hit.level or ''}/{hit.kind}"


def _markdown(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    if not isinstance(result, SearchResult):
        from ee.render.pack_text import pack_markdown

        markdown = pack_markdown(result)
        if result.items:
            return markdown
        from ee.query.engine import count_tokens

        note = "\n" + nothing_found(result) + "\n"
        if result.budget.used_tokens + count_tokens(note) > result.budget.max_tokens:
            return markdown  # (the budget holds not even that line: it stays the limit)
        return markdown + note
    from ee.render.pack_text import explain_lines

    lines = [f"# ee search: {result.query['text']}", ""]
    if not result.hits:
        lines.append(nothing_found(result))
    for hit in result.hits:
        lines.append(f"## {hit.rank}. {hit.title if 'title' in hit.shown else hit.id}")
        lines.append("")
        lines.append(f"`{hit.id}` · {_kind_of(hit)} · score {hit.score:.4f}")
        if hit.why:
            lines.append(f"*why:* {hit.why}")
        for line in explain_lines(hit, ""):  # (only when --explain asked for it)
            label, _, rest = line.partition(": ")
            lines.append(f"*{label}:* {rest}")
        if hit.body:
            lines += ["", hit.body]
        lines.append("")
    return "\n".join(lines)


def _hook(result: SearchResult | Pack, degraded: list[dict[str, Any]]) -> str:
    """The JSON an agent harness hook injects (Claude Code's ``hookSpecificOutput.additionalContext``): a
    pack's light Markdown (each item with its id; the JSON wrapper and escapes then stay within the
    Markdown's size), a search's Markdown.

    Nothing at all when nothing is relevant: an empty output injects no context (an agent's context is
    precious; a heading with no memories under it is noise)."""
    from ee.render.pack_text import pack_markdown

    if not items_of(result):
        return ""
    event = os.environ.get(HOOK_EVENT_ENV, "UserPromptSubmit")
    if not isinstance(result, SearchResult):
        text = pack_markdown(result, light=True).strip()
    else:
        text = _markdown(result, degraded).strip()
    return dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, indent=None)


def _one_line(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut at a word before ``limit`` characters (with "…")."""
    line = " ".join(str(text).split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.") + "…"


# The other formats ("json" is the envelope itself: see render).
_RENDERERS: dict[str, Callable[[SearchResult | Pack, list[dict[str, Any]]], str]] = {
    "jsonl": _jsonl,
    "compact": _compact,
    "toon": _toon,
    "human": _human,
    "markdown": _markdown,
    "hook": _hook,
}
