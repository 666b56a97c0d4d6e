"""Search results and context packs in every output format: human, json, jsonl, compact, markdown,
toon and hook. Renderers take the response data and return text; they never read files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ee.render import dumps, envelope

HOOK_EVENT_ENV = "EE_HOOK_EVENT"


def render(kind: str, data: dict[str, Any], fmt: str) -> str:
    """``kind`` is "search" or "context"; the text ends with a newline."""
    data = dict(data)
    degraded = data.pop("degraded", [])
    renderer: Callable[[str, dict[str, Any], list[dict[str, Any]]], str] = _RENDERERS[fmt]
    text = renderer(kind, data, degraded)
    return text if text.endswith("\n") else text + "\n"


def items_of(kind: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    if kind == "search":
        return list(data.get("hits", []))
    return [item for section in data.get("sections", []) for item in section.get("items", [])]


def _json(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    return dumps(envelope(data, degraded))


def _jsonl(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """A header line, one line per hit / pack item, a footer line (each a JSON object with a ``type``)."""
    items = items_of(kind, data)
    header = {"type": "header", "schema": "ee.response.v1", "kind": kind}
    header |= {k: v for k, v in data.items() if k not in ("hits", "sections", "omitted")}
    lines = [dumps(header, indent=None)]
    lines += [dumps({"type": "item", **item}, indent=None) for item in items]
    footer: dict[str, Any] = {"type": "footer", "count": len(items), "degraded": degraded}
    if kind == "context":
        footer["omitted"] = data.get("omitted", [])
        footer["pack_hash"] = data.get("pack_hash")
    lines.append(dumps(footer, indent=None))
    return "\n".join(lines)


def _compact(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """One line: every item as ``id|kind|title``, joined by `` ;; ``."""
    parts = [f"{i.get('id')}|{i.get('kind', '')}|{_one_line(i.get('title') or i.get('body', ''))}"
             for i in items_of(kind, data)]
    prefix = f"ee {kind} ({len(parts)})"
    return f"{prefix}: " + " ;; ".join(parts) if parts else f"{prefix}: nothing found"


def _toon(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    import toon_format

    return str(toon_format.encode(envelope(data, degraded)))


def _human(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    if kind == "context":
        from ee.render.pack_text import pack_human

        return pack_human(data)
    hits = data.get("hits", [])
    if not hits:
        return f"no memories match {data['query']['text']!r}"
    lines = []
    for hit in hits:
        tags = f" [{', '.join(hit['tags'])}]" if hit.get("tags") else ""
        flags = f"  ({', '.join(hit['flags'])})" if hit.get("flags") else ""
        lines.append(f"{hit['rank']:>3}. {hit.get('title', '')}{flags}")
        meta = f"{hit['id']}  {hit.get('level', '')}/{hit.get('kind', '')}{tags}  score {hit['score']:.4f}"
        lines.append(f"     {meta}")
        if hit.get("why"):
            lines.append(f"     why: {hit['why']}")
    if data.get("next_cursor"):
        rest = data["total"] - data.get("offset", 0) - data["returned"]
        lines.append(f"… {rest} more (raise --limit, or page with pagination.cursor {data['next_cursor']})")
    return "\n".join(lines)


def _markdown(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    if kind == "context":
        from ee.render.pack_text import pack_markdown

        return pack_markdown(data)
    lines = [f"# ee search: {data['query']['text']}", ""]
    for hit in data.get("hits", []):
        lines.append(f"## {hit['rank']}. {hit.get('title', hit['id'])}")
        lines.append("")
        kind_of = f"{hit.get('level', '')}/{hit.get('kind', '')}"
        lines.append(f"`{hit['id']}` · {kind_of} · score {hit['score']:.4f}")
        if hit.get("why"):
            lines.append(f"*why:* {hit['why']}")
        if hit.get("body"):
            lines += ["", hit["body"]]
        lines.append("")
    return "\n".join(lines)


def _hook(kind: str, data: dict[str, Any], degraded: list[dict[str, Any]]) -> str:
    """The JSON an agent harness hook injects (Claude Code's ``hookSpecificOutput.additionalContext``)."""
    event = os.environ.get(HOOK_EVENT_ENV, "UserPromptSubmit")
    text = _markdown(kind, data, degraded).strip() if items_of(kind, data) else ""
    return dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, indent=None)


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 100 else line[:99] + "…"


_RENDERERS: dict[str, Callable[[str, dict[str, Any], list[dict[str, Any]]], str]] = {
    "json": _json,
    "jsonl": _jsonl,
    "compact": _compact,
    "toon": _toon,
    "human": _human,
    "markdown": _markdown,
    "hook": _hook,
}
