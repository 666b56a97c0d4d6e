"""The generic format: a JSON array, or JSON Lines, of ``{role, content}`` messages.

``role`` is ``user``, ``assistant`` (``human``/``ai`` and ``bot`` read as those) or ``tool``; ``system``
messages are skipped. ``content`` is a string or a list of ``{type: text, text}`` blocks. ``timestamp``
(or ``time``, ``created_at``) and ``name`` are optional; a ``session_id`` (or ``sessionId``) on a message
names the session, else the file's stem does. Other harnesses and exporters can write this.
"""

from __future__ import annotations

from typing import Any

NAME = "messages"
_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
_TIME_KEYS = ("timestamp", "time", "created_at", "date")


def looks_like(record: dict[str, Any]) -> bool | None:
    role = record.get("role")
    return isinstance(role, str) and "content" in record and "payload" not in record


def turn_fields(record: dict[str, Any], state: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("session_id", "sessionId"):
        if isinstance(record.get(key), str) and record[key]:
            state.setdefault("session_id", record[key])
    role = _ROLES.get(str(record.get("role", "")).lower())
    if role is None:
        return None
    content = record.get("content")
    if isinstance(content, list):
        content = "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    if not isinstance(content, str) or not content.strip():
        return None
    time = next((record[k] for k in _TIME_KEYS if isinstance(record.get(k), str)), None)
    name = record.get("name")
    text = f"{name}: {content}" if isinstance(name, str) and name and role == "user" else content
    return {"role": role, "text": text, "time": time, "tools": (), "results": ()}
