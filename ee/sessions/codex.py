"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Each line is ``{"timestamp", "type", "payload"}``. ``session_meta`` gives the session id, ``cwd`` and
``git.branch``; ``turn_context`` a later ``cwd``; ``response_item`` holds the turns: ``message`` (role
``user`` / ``assistant``, content blocks ``input_text`` / ``output_text``), ``function_call`` (``name``,
``arguments`` as a JSON string, ``call_id``), ``local_shell_call`` (``action.command``) and
``function_call_output`` (``call_id``, ``output``, which may be JSON with ``metadata.exit_code``).
``event_msg`` lines repeat the messages and ``reasoning`` is encrypted: both are skipped, as are the
``<environment_context>`` and ``<user_instructions>`` messages Codex adds to every session. Older rollouts
wrote the payloads without the envelope (a first line with ``id`` and ``instructions``): read the same way.
"""

from __future__ import annotations

import json
from typing import Any

from ee.sessions.turns import (
    MAX_COMMAND_CHARS,
    MAX_FILES,
    MAX_NAME_CHARS,
    ToolCall,
    ToolResult,
    cut,
    first_lines,
)

NAME = "codex"
TYPES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")
_BOILERPLATE = ("<environment_context>", "<user_instructions>", "<permissions instructions>", "# AGENTS.md")


def looks_like(record: dict[str, Any]) -> bool | None:
    if record.get("type") in TYPES and "payload" in record:
        return True
    if "instructions" in record and "id" in record and "role" not in record:
        return True  # an older rollout's first line
    if record.get("type") in ("function_call", "function_call_output", "local_shell_call", "reasoning"):
        return True
    return None if record.get("type") == "message" and "role" in record else False


def turn_fields(record: dict[str, Any], state: dict[str, Any]) -> dict[str, Any] | None:
    kind = record.get("type")
    payload = record.get("payload") if kind in TYPES else record
    if not isinstance(payload, dict):
        return None
    time = record.get("timestamp") or payload.get("timestamp")
    if kind == "session_meta" or ("instructions" in payload and "id" in payload and "role" not in payload):
        if isinstance(payload.get("id"), str):
            state.setdefault("session_id", payload["id"])
        if isinstance(payload.get("cwd"), str):
            state["cwd"] = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str):
            state["branch"] = git["branch"]
        return None
    if kind == "turn_context":
        if isinstance(payload.get("cwd"), str):
            state["cwd"] = payload["cwd"]
        return None
    if kind in ("event_msg", "compacted"):
        return None
    item = payload.get("type")
    fields: dict[str, Any] = {"time": time, "text": "", "tools": (), "results": ()}
    if item == "message":
        role = payload.get("role")
        if role not in ("user", "assistant"):
            return None
        text = _text(payload.get("content"))
        if not text or text.lstrip().startswith(_BOILERPLATE):
            return None
        return fields | {"role": role, "text": text}
    if item in ("function_call", "local_shell_call", "custom_tool_call"):
        return fields | {"role": "assistant", "tools": (_call(payload),)}
    if item in ("function_call_output", "custom_tool_call_output"):
        return fields | {"role": "tool", "results": (_result(payload),)}
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = (
        [block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str)]
        if isinstance(content, list)
        else []
    )
    return "\n".join(p for p in parts if p.strip())


def _call(payload: dict[str, Any]) -> ToolCall:
    name = cut(str(payload.get("name") or payload.get("type") or "tool"), MAX_NAME_CHARS)
    command: Any = ""
    args: Any = payload.get("arguments") or payload.get("input")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            command = args if name in ("shell", "exec_command") else ""
    action = payload.get("action")
    if isinstance(action, dict):
        args = action
    files: tuple[str, ...] = ()
    if isinstance(args, dict):
        command = args.get("command") or args.get("cmd") or command
        if isinstance(args.get("path"), str):
            files = (args["path"],)
    if isinstance(command, list):
        # ["bash", "-lc", "pytest -q"]: the script a shell was asked to run is the command
        command = (
            command[-1] if len(command) >= 3 and command[1] in ("-lc", "-c") else " ".join(map(str, command))
        )
    if name == "apply_patch" or (isinstance(command, str) and command.startswith("apply_patch")):
        files = files or _patched_files(str(args if isinstance(args, str) else command))
    return ToolCall(
        str(payload.get("call_id") or ""),
        name,
        cut(str(command or ""), MAX_COMMAND_CHARS),
        files[:MAX_FILES],  # (a patch may name thousands: evidence keeps what a person would read)
    )


def _patched_files(patch: str) -> tuple[str, ...]:
    out = []
    for line in patch.splitlines():
        for mark in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
            if line.startswith(mark):
                out.append(line[len(mark) :].strip())
    return tuple(out)


def _result(payload: dict[str, Any]) -> ToolResult:
    output: Any = payload.get("output")
    code: Any = None
    if isinstance(output, str):
        try:
            parsed = json.loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            output = parsed.get("output", "")
            meta = parsed.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
    if isinstance(output, dict):
        code = output.get("exit_code", code)
        output = output.get("content") or output.get("output") or ""
    text = output if isinstance(output, str) else ""
    if code is None and text.startswith("Exit code: "):
        code = text.split("\n", 1)[0].removeprefix("Exit code: ").strip()
    failed = code not in (None, 0, "0") or payload.get("success") is False
    return ToolResult(str(payload.get("call_id") or ""), failed, first_lines(text) if failed else "")
