"""Search results and context packs in every output format: human, json, jsonl, compact, markdown,
toon and hook. Renderers take the response data and return text; they never read files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ee.pack.profiles import SECTION_TITLES
from ee.render import dumps, envelope, visible
from ee.render.pack_text import blocks, explain_lines

if TYPE_CHECKING:
    from ee.results import Pack, SearchResult

HOOK_EVENT_ENV = "EE_HOOK_EVENT"


def render(kind: str, result: SearchResult | Pack, fmt: str, *, indent: int | None = 2) -> str:
    """``kind`` is "search" or "context"; the text ends with a newline, unless it is empty (the ``hook``
    format of an empty answer: nothing at all is injected). ``indent`` is the ``json`` format's (None: the
    envelope on one line)."""
    data, degraded = result.envelope_parts()
    if fmt == "json":
        return dumps(envelope(data, degraded), indent=indent) + "\n"
    from ee.policy.secrets import mask_output  # as envelope masks the JSON's

    degraded = mask_output(degraded)
    renderer: Callable[[str, dict[str, Any], list[dict[str, Any]]], str] = _RENDERERS[fmt]
    text = renderer(kind, data, degraded)
    if not text and fmt == "hook":
        return text
    if fmt in _TEXT_FORMATS:
        text = visible(text)
    return text if text.endswith("\n") else text + "\n"


_TEXT_FORMATS = ("human", "markdown", "compact", "toon")  # (jsonl and hook are JSON: escaped already)


def items_of(kind: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    if kind == "search":
        return list(data.get("hits", []))
    return [item for section in data.get("sections", []) for item in section.get("items", [])]


def _item_line(item: dict[str, Any]) -> dict[str, Any]:
    if "type" not in item:
        return {"type": "item", **item}
    return {"type": "item", "item_type": item["type"], **{k: v for k, v in item.items() if k != "type"}}


def _jsonl(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """A header line, one line per hit / pack item, a footer line (each a JSON object with a ``type``)."""
    items = items_of(kind, data)
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


def brief_items(kind: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each hit / pack item as an agent reads it: id, where it belongs (rank, or section and posture),
    kind, its text (the body, else its title), a short why and its provenance in brief. Only what the
    item carries (``--fields minimal`` carries no why)."""
    out = []
    for item in items_of(kind, data):
        row: dict[str, Any] = {"id": item["id"]}
        if kind == "search":
            row["rank"] = item.get("rank")
        row["kind"] = item.get("kind", "")
        row["text"] = item.get("body") or item.get("title", "")
        row["why"] = short_why(item)
        row["source"] = short_provenance(item)
        if item.get("explanation") or item.get("selection"):  # (only when --explain asked for it)
            row["explain"] = "; ".join(line.strip() for line in explain_lines(item, ""))
        out.append(row)
    return out


def short_why(item: dict[str, Any]) -> str:
    """The retrieval arm that ranked the item best (``lexical #4``), a link hop, and its flags; the first
    clause of its why when it has no components."""
    components = item.get("components") or {}
    ranks = [(components[arm]["rank"], arm) for arm in ("lexical", "semantic") if components.get(arm)]
    parts = [f"{arm} #{rank}" for rank, arm in sorted(ranks)[:1]]
    if components.get("graph_hops"):
        parts.append(f"linked ({components['graph_hops']} hop)")
    if not parts and item.get("why"):
        parts.append(str(item["why"]).split(";")[0])
    parts += item.get("flags") or []
    return " ".join(parts)


def short_provenance(item: dict[str, Any]) -> str:
    """Who wrote it and when, in a few words: ``human 2026-12-02`` (``uncommitted`` for a working-tree
    edit); its trust class when provenance is not in the fields."""
    provenance = item.get("provenance")
    if not provenance:
        return str(item.get("trust", ""))
    if "session_id" in provenance:  # session evidence: where it was said
        day = str(provenance.get("time") or "")[:10]
        return f"{provenance.get('file_name', '')} turn {provenance.get('turn')} {day}"
    if not provenance.get("committed", True):
        return "uncommitted"
    who = provenance.get("actor") or provenance.get("author") or ""
    return f"{who} {str(provenance.get('date') or '')[:10]}".strip()


def nothing_found(kind: str, data: dict[str, Any]) -> str:
    """The one sentence every text format says when an answer holds no item (so an agent can tell "ee ran
    and found nothing" from a failure): why, with the counts."""
    if kind == "search":
        below = sum(o["count"] for o in data.get("omitted", []) if o.get("reason") == "below_relevance_floor")
        other = sum(o["count"] for o in data.get("omitted", [])) - below
        what, place = "matches this query", "query"
    else:
        counts = data.get("counts", {})
        below = (counts.get("omitted_by_reason") or {}).get("below_relevance_floor", 0)
        other = counts.get("omitted", 0) - below
        what, place = "is relevant to this task", "task"
    reasons = []
    if below:
        reasons.append(f"{below:,} below the relevance floor {data.get('min_relevance') or 0:g}")
    if other:
        reasons.append(f"{other:,} left out by the {'filters' if kind == 'search' else 'budget'}")
    if not reasons:
        reasons.append(f"no memory shares a word or a meaning with the {place}")
    return f"No memory {what} ({'; '.join(reasons)})."


def _headline(kind: str, data: dict[str, Any], count: int) -> str:
    if kind == "search":
        text = _one_line(data.get("query", {}).get("text", ""))
        head = f"ee search: {text} ({count} of {data.get('total', count)})"
        if data.get("truncated"):
            head += f", cut by {data.get('truncated_reason')}"
        return head
    budget = data.get("budget", {})
    return (
        f"ee context: {_one_line(data.get('task', ''))} ({count} items, "
        f"{budget.get('used_tokens', 0)}/{budget.get('max_tokens', 0)} tokens)"
    )


def _compact(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """A headline, then one line per item: ``id kind: text… [why; source]``, a pack's items under their
    section (advisory ones marked): about a third of the Markdown's tokens."""
    rows = brief_items(kind, data)
    lines = [_headline(kind, data, len(rows))]
    advisory = {i["id"] for i in items_of(kind, data) if i.get("authoritative") is False}
    section = None
    for row, item in zip(rows, items_of(kind, data), strict=True):
        if kind == "context" and item.get("section") != section:
            section = item.get("section")
            lines.append(f"## {SECTION_TITLES.get(str(section), section)}")
        rank = f"{row['rank']}. " if row.get("rank") is not None else ""
        kind_of = f"{row['kind']}: " if row["kind"] else ""
        note = "; ".join(x for x in (row["why"], row["source"], row.get("explain")) if x)
        mark = " (advisory)" if row["id"] in advisory else ""
        text = _one_line(row["text"], BRIEF_TEXT_CHARS)
        lines.append(f"{rank}{row['id']} {kind_of}{text}{mark}" + (f" [{note}]" if note else ""))
    if not rows:
        lines.append(nothing_found(kind, data))
    return "\n".join(lines)


def _toon(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """TOON (tab-delimited: bodies keep their commas unquoted) of the brief items: a pack's by section,
    the advisory ones (agent-written, imported) under ``advisory``; the omitted candidates counted by
    reason."""
    import toon_format

    rows = brief_items(kind, data)
    doc: dict[str, Any]
    if kind == "search":
        doc = {
            "query": data.get("query", {}).get("text", ""),
            "total": data.get("total", len(rows)),
            "hits": rows,
        }
        if data.get("truncated"):
            doc["truncated"] = data.get("truncated_reason") or True
        if data.get("next_cursor"):
            doc["next_cursor"] = data["next_cursor"]
    else:
        budget = data.get("budget", {})
        doc = {
            "task": data.get("task", ""),
            "tokens": f"{budget.get('used_tokens', 0)}/{budget.get('max_tokens', 0)}",
        }
        by_id = {row["id"]: row for row in rows}
        for authoritative, sections in blocks(data):
            rows_of = {section: [by_id[item["id"]] for item in items] for section, items in sections}
            if authoritative:
                doc |= rows_of  # authoritative items by section, advisory ones apart
            else:
                doc["advisory"] = rows_of
        omitted = data.get("counts", {}).get("omitted_by_reason")
        if omitted:
            doc["omitted"] = omitted
    if not rows:
        doc["found"] = nothing_found(kind, data)
    if degraded:
        doc["degraded"] = [d.get("message", "") for d in degraded]
    return str(toon_format.encode(doc, delimiter="\t"))


def _human(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    if kind == "context":
        from ee.render.pack_text import pack_human

        return pack_human(data)
    hits = data.get("hits", [])
    lines = [] if hits else [nothing_found(kind, data)]
    for hit in hits:
        tags = f" [{', '.join(hit['tags'])}]" if hit.get("tags") else ""
        flags = f"  ({', '.join(hit['flags'])})" if hit.get("flags") else ""
        lines.append(f"{hit['rank']:>3}. {hit.get('title', '')}{flags}")
        meta = f"{hit['id']}  {_kind_of(hit)}{tags}  score {hit['score']:.4f}"
        lines.append(f"     {meta}")
        if hit.get("why"):
            lines.append(f"     why: {hit['why']}")
        lines += explain_lines(hit, "     ")
    lines += _nearest_lines(data)
    if data.get("next_cursor"):
        rest = data["total"] - data.get("offset", 0) - data["returned"]
        by = data.get("truncated_reason") or "budget.maxResults"
        raise_it = "raise --limit" if by != "budget.maxTokens" else "raise budget.maxTokens"
        lines.append(
            f"… {rest} more: cut by {by} ({raise_it}, or page with pagination.cursor {data['next_cursor']})"
        )
    return "\n".join(lines)


def _nearest_lines(data: dict[str, Any]) -> list[str]:
    """With --explain: the dropped hits nearest the relevance floor, each with its evidence."""
    lines = []
    for entry in data.get("omitted", []):
        for near in entry.get("nearest", []):
            found = near["explanation"]
            evidence = f"coverage {found.get('coverage', 0):.2f}"
            if "cosine" in found:
                evidence += f", cosine {found['cosine']:.2f} (z {found.get('z', 0):.2f})"
            part = f", from the part {found['from_part']!r}" if found.get("from_part") else ""
            lines.append(
                f"  below the floor {data.get('min_relevance', 0):g}: {near['id']}  relevance "
                f"{near['relevance']:.2f} ({evidence}{part})"
            )
    return lines


def _kind_of(hit: dict[str, Any]) -> str:
    """``level/kind`` of a memory hit; ``session evidence · file turn N`` of an evidence hit."""
    if hit.get("type") == "evidence":
        return f"session evidence · {short_provenance(hit)}".rstrip(" ·")
    return f"{hit.get('level', '')}/{hit.get('kind', '')}"


def _markdown(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    if kind == "context":
        from ee.render.pack_text import pack_markdown

        markdown = pack_markdown(data)
        if items_of(kind, data):
            return markdown
        from ee.query.engine import count_tokens

        note = "\n" + nothing_found(kind, data) + "\n"
        budget = data.get("budget", {})
        if budget.get("used_tokens", 0) + count_tokens(note) > budget.get("max_tokens", 0):
            return markdown  # (the budget holds not even that line: it stays the limit)
        return markdown + note
    lines = [f"# ee search: {data['query']['text']}", ""]
    if not data.get("hits"):
        lines.append(nothing_found(kind, data))
    for hit in data.get("hits", []):
        lines.append(f"## {hit['rank']}. {hit.get('title', hit['id'])}")
        lines.append("")
        lines.append(f"`{hit['id']}` · {_kind_of(hit)} · score {hit['score']:.4f}")
        if hit.get("why"):
            lines.append(f"*why:* {hit['why']}")
        for line in explain_lines(hit, ""):  # (only when --explain asked for it)
            label, _, rest = line.partition(": ")
            lines.append(f"*{label}:* {rest}")
        if hit.get("body"):
            lines += ["", hit["body"]]
        lines.append("")
    return "\n".join(lines)


def _hook(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """The JSON an agent harness hook injects (Claude Code's ``hookSpecificOutput.additionalContext``): a
    pack's light Markdown (each item with its id; the JSON wrapper and escapes then stay within the
    Markdown's size), a search's Markdown.

    Nothing at all when nothing is relevant: an empty output injects no context (an agent's context is
    precious; a heading with no memories under it is noise)."""
    from ee.render.pack_text import pack_markdown

    if not items_of(kind, data):
        return ""
    event = os.environ.get(HOOK_EVENT_ENV, "UserPromptSubmit")
    if kind == "context":
        text = pack_markdown(data, light=True).strip()
    else:
        text = _markdown(kind, data, degraded).strip()
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
_RENDERERS: dict[str, Callable[[str, dict[str, Any], list[dict[str, Any]]], str]] = {
    "jsonl": _jsonl,
    "compact": _compact,
    "toon": _toon,
    "human": _human,
    "markdown": _markdown,
    "hook": _hook,
}
