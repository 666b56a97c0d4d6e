"""Claude Code transcripts: ``~/.claude/projects/<cwd with / as ->/<session id>.jsonl``.

Each line is a JSON object. Turns are the lines of ``type`` ``user`` and ``assistant``: ``message.content``
is a string or a list of blocks (``text``, ``tool_use`` with ``name`` and ``input``, ``tool_result`` with
``tool_use_id``, ``content`` and ``is_error``; ``thinking`` is skipped), with ``timestamp``, ``sessionId``,
``cwd``, ``gitBranch`` and ``isSidechain`` beside it. Every other type (``summary``,
``file-history-snapshot``, ``queue-operation``, ``system``) and ``isMeta`` lines are skipped.
"""

from __future__ import annotations

from typing import Any

from ee.sessions.turns import MAX_COMMAND_CHARS, MAX_NAME_CHARS, ToolCall, ToolResult, cut, first_lines

NAME = "claude-code"
TURN_TYPES = ("user", "assistant")
OTHER_TYPES = ("summary", "file-history-snapshot", "queue-operation", "system", "progress")
# Tools whose input names the file they read or change.
_FILE_KEYS = ("file_path", "notebook_path", "path")


def looks_like(record: dict[str, Any]) -> bool | None:
    """True for a Claude Code line, False for another format's, None when this line cannot tell."""
    kind = record.get("type")
    if kind in TURN_TYPES and isinstance(record.get("message"), dict):
        return True
    if kind in OTHER_TYPES and any(k in record for k in ("sessionId", "leafUuid", "uuid", "messageId")):
        return True
    return None if kind in OTHER_TYPES else False


def turn_fields(record: dict[str, Any], state: dict[str, Any]) -> dict[str, Any] | None:
    """The pieces of a turn in this line (role, text, time, cwd, branch, sidechain, tools, results), or
    None for a line that is not a turn. ``state`` keeps what the file said so far (its session id)."""
    session = record.get("sessionId")
    if isinstance(session, str) and session and "session_id" not in state:
        state["session_id"] = session
    for key, name in (("cwd", "cwd"), ("gitBranch", "branch")):
        if isinstance(record.get(key), str) and record[key]:
            state[name] = record[key]
    if record.get("type") not in TURN_TYPES or record.get("isMeta"):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    role = record["type"]
    texts: list[str] = []
    tools: list[ToolCall] = []
    results: list[ToolResult] = []
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            tools.append(_tool_call(block))
        elif kind == "tool_result":
            results.append(_tool_result(block))
    text = "\n".join(t for t in texts if t.strip())
    if role == "user" and not text and results:
        role = "tool"
    if not text and not tools and not results:
        return None
    return {
        "role": role,
        "text": text,
        "time": record.get("timestamp"),
        "cwd": record.get("cwd") if isinstance(record.get("cwd"), str) else "",
        "branch": record.get("gitBranch") if isinstance(record.get("gitBranch"), str) else "",
        "sidechain": record.get("isSidechain") is True,
        "tools": tuple(tools),
        "results": tuple(results),
    }


def _tool_call(block: dict[str, Any]) -> ToolCall:
    name = cut(str(block.get("name") or "tool"), MAX_NAME_CHARS)
    given = block.get("input")
    data: dict[str, Any] = given if isinstance(given, dict) else {}
    command = data["command"] if isinstance(data.get("command"), str) else ""
    files = tuple(str(data[key]) for key in _FILE_KEYS if isinstance(data.get(key), str))
    return ToolCall(str(block.get("id") or ""), name, cut(command, MAX_COMMAND_CHARS), files)


def _tool_result(block: dict[str, Any]) -> ToolResult:
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    failed = block.get("is_error") is True
    error = first_lines(content) if failed and isinstance(content, str) else ""
    return ToolResult(str(block.get("tool_use_id") or ""), failed, error)
