"""One transcript file → its new turns: format detection, incremental reading, the file's own errors.

A file is read from ``start`` (the byte offset an earlier import stopped at; 0 the first time) to its last
complete line. A last line that does not parse (a transcript still being written, as at ``PreCompact``)
is left for the next import; a line before it that does not parse is an error naming ``file:line``, and
nothing of that file is imported. A file above :data:`MAX_BYTES` (``[sessions] max_file_bytes``) is
refused whole. The generic format may also be one JSON array, read whole (no partial reads).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ee.errors import StorageError, UsageError
from ee.sessions.turns import Turn, cut, field, session_name

MAX_BYTES = 256 * 1024 * 1024  # the default of [sessions] max_file_bytes
FORMATS = ("claude-code", "codex", "messages")
_DETECT_LINES = 50  # lines read to tell the format of a JSON Lines file


class TranscriptError(StorageError):
    """A file that is not a transcript, malformed before its last line, or too large: nothing of it is
    imported (exit code 4)."""

    code = "transcript_invalid"


@dataclass(frozen=True, slots=True)
class Read:
    """What one read of a file found: the turns past ``start``, where the next read starts, the format."""

    format: str
    session_id: str
    turns: tuple[Turn, ...]
    end: int  # the byte offset after the last line taken
    size: int


def reader(name: str) -> ModuleType:
    from ee.sessions import claude_code, codex, messages

    return {"claude-code": claude_code, "codex": codex, "messages": messages}[name]


def read_transcript(
    path: Path,
    *,
    fmt: str | None = None,
    start: int = 0,
    first_index: int = 0,
    state: dict[str, Any] | None = None,
    max_bytes: int = MAX_BYTES,
) -> Read:
    """The turns of ``path`` from byte ``start`` on, numbered from ``first_index``; ``state`` is what the
    lines before ``start`` said (session id, cwd, branch), updated in place."""
    from ee.config import NotRegularFile, open_regular

    shown = str(path)
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        raise UsageError(
            f"{shown}: no such file", "give the path of a transcript (.jsonl or .json)"
        ) from None
    except (NotRegularFile, OSError) as exc:
        raise TranscriptError(
            f"{shown}: cannot be read ({exc.strerror or exc})", "give a transcript file"
        ) from None
    with open(fd, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > max_bytes:
            raise TranscriptError(
                f"{shown}: {size} bytes is above the limit of {max_bytes} bytes",
                "raise [sessions] max_file_bytes in .ee/config.toml, or split the transcript",
            )
        file.seek(start)
        data = file.read(size - start)
        mtime = os.fstat(file.fileno()).st_mtime
    state = {} if state is None else state
    stripped = data.lstrip()
    if start == 0 and stripped.startswith(b"["):
        records, end, next_line = _array(shown, data), len(data), 1
    else:
        records, taken, next_line = _lines(shown, data, state.get("line", 1), start)
        end = start + taken
    forced = fmt is not None and start == 0
    whole = start == 0 and stripped.startswith(b"[")  # (an array is read whole, never partly)
    begun = not stripped or (b"\n" not in stripped and not data.endswith(b"\n"))
    if not records and not whole and not state.get("format") and begun:
        # nothing whole yet (an empty file, or its first line still being written): the next import reads it
        return Read("", path.stem, (), end, size)
    if fmt is None:
        fmt = state.get("format") or detect(shown, [r for _l, _o, r in records])
    if fmt not in FORMATS:
        raise UsageError(f"unknown transcript format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    state["format"] = fmt
    module = reader(fmt)
    if forced and records and not any(module.looks_like(r) for _l, _o, r in records):
        # (a format forced on a file it does not fit reads nothing of it: say so, as detection does)
        raise TranscriptError(
            f"{shown}: not a {fmt} transcript (no line of it reads as one)",
            f"import it without --format (ee detects the format), or force the one it is in: "
            f"--format {'|'.join(FORMATS)}",
            {"path": shown, "format": fmt},
        )
    turns = []
    when = _mtime_text(mtime)
    index = first_index
    for line, offset, record in records:
        fields = module.turn_fields(record, state)
        if fields is None:
            continue
        turns.append(
            Turn(
                index=index,
                line=line,
                offset=offset,
                role=fields["role"],
                text=cut(fields.get("text") or ""),
                time=_time(fields.get("time")) or when,
                session_id="",
                cwd=field(fields.get("cwd") or state.get("cwd", "")),
                branch=field(fields.get("branch") or state.get("branch", "")),
                sidechain=bool(fields.get("sidechain")),
                tools=fields.get("tools", ()),
                results=fields.get("results", ()),
            )
        )
        index += 1
    session = session_name(state.get("session_id") or path.stem)
    turns = [_with_session(t, session) for t in turns]
    if state.get("session_id"):  # (kept for the next import: as safe as what it gave)
        state["session_id"] = session
    for key in ("cwd", "branch"):
        if isinstance(state.get(key), str):
            state[key] = field(state[key])
    state["line"] = next_line
    return Read(fmt, session, tuple(turns), end, size)


def _with_session(turn: Turn, session: str) -> Turn:
    from dataclasses import replace

    return replace(turn, session_id=session)


def detect(shown: str, records: list[dict[str, Any]]) -> str:
    """The format of a file from its first records: the first one a reader claims decides."""
    from ee.sessions import claude_code, codex, messages

    for record in records[:_DETECT_LINES]:
        for module in (claude_code, codex, messages):
            if module.looks_like(record):
                return str(module.NAME)
    raise TranscriptError(
        f"{shown}: not a transcript ee reads (no Claude Code, Codex or {{role, content}} line found)",
        "check the file, or force a format with --format claude-code|codex|messages",
    )


def _lines(
    shown: str, data: bytes, first_line: int, start: int
) -> tuple[list[tuple[int, int, dict[str, Any]]], int, int]:
    """(line number, byte offset in the file, object) of each complete line, how many bytes they take,
    and the number of the line after them. The last line is left when it does not parse (still being
    written); any other line that does not parse is an error."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    at = 0
    number = first_line
    content_end = len(data.rstrip())  # past it, only whitespace: the line ending there is the last
    while at < len(data):
        newline = data.find(b"\n", at)
        last = newline < 0 or newline + 1 >= content_end
        stop = len(data) if newline < 0 else newline + 1
        raw = data[at:stop].strip()
        if raw:
            try:
                record = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                if last:
                    return out, at, number  # a partial last line: the next import reads it
                if not out and start == 0:  # the file's first line: no transcript at all, most likely
                    raise TranscriptError(
                        f"{shown}:{number}: not a transcript ee reads (line {number} is not JSON: "
                        f"{_reason(exc)})",
                        "give a Claude Code or Codex .jsonl, or {role, content} JSON or JSON Lines; if it "
                        "is one, fix that line, or force a format with --format claude-code|codex|messages",
                        {"path": shown, "line": number},
                    ) from None
                raise TranscriptError(
                    f"{shown}:{number}: not a JSON line ({_reason(exc)})",
                    "fix or remove that line (nothing of this file was imported), then import again",
                    {"path": shown, "line": number},
                ) from None
            if not isinstance(record, dict):
                if last and newline < 0:
                    return out, at, number
                raise TranscriptError(
                    f"{shown}:{number}: a JSON line must be an object, not {type(record).__name__}",
                    "is this a transcript? force a format with --format, or leave the file out",
                    {"path": shown, "line": number},
                )
            out.append((number, start + at, record))
        number += 1
        at = stop
    return out, at, number


def _array(shown: str, data: bytes) -> list[tuple[int, int, dict[str, Any]]]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{shown}:{line}" if line else shown
        raise TranscriptError(
            f"{where}: not a JSON array of messages ({_reason(exc)})",
            "fix the JSON (nothing of this file was imported), then import again",
            {"path": shown, "line": line},
        ) from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise TranscriptError(
            f"{shown}: a JSON array must hold message objects", "give {role, content} objects"
        )
    return [(i + 1, 0, item) for i, item in enumerate(value)]


def _reason(exc: BaseException) -> str:
    return getattr(exc, "msg", None) or type(exc).__name__


def _time(value: Any) -> str | None:
    """An RFC 3339 UTC time from a transcript's ``timestamp`` (a string or epoch seconds/milliseconds)."""
    from datetime import UTC, datetime

    from ee.store.ids import format_time, parse_time

    try:
        if isinstance(value, str) and value.strip():
            return format_time(parse_time(value))
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            seconds = value / 1000 if value > 1e11 else value
            return format_time(datetime.fromtimestamp(seconds, UTC))
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _mtime_text(mtime: float) -> str:
    from datetime import UTC, datetime

    from ee.store.ids import format_time

    return format_time(datetime.fromtimestamp(mtime, UTC))
