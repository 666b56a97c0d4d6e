"""Turns → evidence: each exchange (a user turn and the replies and tool calls after it) is one piece,
masked for secrets and screened for instruction-like text before anything is written."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ee.sessions.turns import ToolCall, ToolResult, Turn, field

MAX_PIECE_CHARS = 2400  # a longer exchange is split at turn boundaries into pieces of about this size
TRUST = "cass_evidence"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One piece of session evidence with its provenance (``turn`` .. ``last_turn`` of the transcript)."""

    id: str
    session_id: str
    transcript: str  # the transcript's absolute path
    file_name: str
    turn: int
    last_turn: int
    line: int
    time: str
    cwd: str
    branch: str
    sidechain: bool
    text: str
    secrets: tuple[str, ...] = ()  # the classes of the secrets masked in ``text``
    flagged: bool = False  # instruction-like text (ee.policy.injection)
    commands: tuple[tuple[str, bool | None], ...] = ()  # (command, failed) of the tool calls
    files: tuple[str, ...] = ()

    def provenance(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript,
            "file_name": self.file_name,
            "session_id": self.session_id,
            "turn": self.turn,
            "last_turn": self.last_turn,
            "line": self.line,
            "time": self.time,
            "cwd": self.cwd,
            "branch": self.branch,
            "sidechain": self.sidechain,
        }


def index_text(item: Evidence) -> str:
    """What the lexical index reads of a piece: its text, then the branch it was said on, which a
    question may name ("what was done on feat/x?") though the exchange itself does not. (The project's
    folder name as well cost the dev set's MRR 0.005: every piece of a project would hold it.)"""
    return f"{item.text}\n{item.branch}"


def exchanges(turns: list[Turn]) -> list[list[Turn]]:
    """The turns grouped into exchanges: a new one starts at each user turn."""
    out: list[list[Turn]] = []
    for turn in turns:
        if turn.role == "user" or not out:
            out.append([turn])
        else:
            out[-1].append(turn)
    return out


def pieces(turns: list[Turn], transcript: str, file_name: str) -> list[Evidence]:
    """The evidence of one exchange (one piece, or several for a long one), secrets masked, flagged."""
    results: dict[str, ToolResult] = {r.call_id: r for t in turns for r in t.results if r.call_id}
    groups: list[list[tuple[Turn, str, list[ToolCall]]]] = [[]]
    size = 0
    for turn in turns:
        calls = [_with_result(call, results.get(call.call_id)) for call in turn.tools]
        lines = [f"{turn.role}: {turn.text}"] if turn.text else []
        lines += [call.line() for call in calls]
        if not lines:
            continue
        text = "\n".join(lines)
        if groups[-1] and size + len(text) > MAX_PIECE_CHARS:
            groups.append([])
            size = 0
        groups[-1].append((turn, text, calls))
        size += len(text) + 1
    return [_piece(group, transcript, file_name) for group in groups if group]


def _with_result(call: ToolCall, result: ToolResult | None) -> ToolCall:
    if result is None:
        return call
    from dataclasses import replace

    return replace(call, failed=result.failed, error=result.error)


def _piece(group: list[tuple[Turn, str, list[ToolCall]]], transcript: str, file_name: str) -> Evidence:
    from ee.policy.injection import scan_injection
    from ee.policy.secrets import find_secrets, redact

    first = group[0][0]
    raw = "\n".join(text for _turn, text, _calls in group)
    found = find_secrets(raw)
    text = redact(raw) if found else raw
    calls = [call for _t, _x, cs in group for call in cs]
    commands = tuple((redact(c.command), c.failed) for c in calls if c.command)
    files = tuple(dict.fromkeys(field(f) for c in calls for f in c.files))
    digest = hashlib.sha256(f"{transcript}\0{first.session_id}\0{first.index}\0{text}".encode()).hexdigest()
    return Evidence(
        id="ev_" + digest[:20],
        session_id=first.session_id,
        transcript=transcript,
        file_name=file_name,
        turn=first.index,
        last_turn=group[-1][0].index,
        line=first.line,
        time=first.time,
        cwd=first.cwd,
        branch=first.branch,
        sidechain=any(turn.sidechain for turn, _x, _c in group),
        text=text,
        secrets=tuple(sorted({f.cls for f in found})),
        flagged=scan_injection(text).flagged,
        commands=commands,
        files=files,
    )
