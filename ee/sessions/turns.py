"""The typed turns every transcript reader yields, and the cuts that keep them small."""

from __future__ import annotations

import re
from dataclasses import dataclass

# What one turn keeps of a long text, and of a tool's output: the rest is cut, and the cut is stated.
MAX_TEXT_CHARS = 4000
MAX_COMMAND_CHARS = 400
MAX_NAME_CHARS = 80  # a tool's name
MAX_FILES = 50  # the files one tool call touched
ERROR_LINES = 3
MAX_ERROR_CHARS = 400
ROLES = ("user", "assistant", "tool")
MAX_FIELD_CHARS = 512  # a provenance field (cwd, branch, a file a tool touched)
PATH_MAX = 4096  # a transcript's own path, which names its record: never cut short (two would be one)
MAX_SESSION_CHARS = 128
# A character a provenance field must not carry: C0 and C1 controls, DEL, line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# What a session id may hold (UUIDs, Codex thread ids, file stems): no path separator, no control.
_SESSION_CHAR = re.compile(r"[^0-9A-Za-z._:@+-]")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as evidence keeps it: what ran, whether it failed, the error's first lines, the files."""

    call_id: str
    name: str
    command: str = ""
    files: tuple[str, ...] = ()
    failed: bool | None = None  # None: no result seen (yet)
    error: str = ""  # the first lines of a failed call's output

    def line(self) -> str:
        """The call as one evidence line: ``$ pytest -q`` / ``Edit a.py`` with ``→ failed: …`` or ``→ ok``."""
        what = f"$ {self.command}" if self.command else self.name
        if self.files and not self.command:
            what += " " + ", ".join(self.files)
        if self.failed:
            return f"{what} → failed: {self.error}" if self.error else f"{what} → failed"
        return f"{what} → ok" if self.failed is False else what


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of a call, matched to it by ``call_id`` (on a line of its own in Claude Code and Codex)."""

    call_id: str
    failed: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a transcript with its provenance.

    ``index`` counts the turns of the file from 0 (skipped lines are not turns); ``line`` is the 1-based
    line it came from; ``time`` an RFC 3339 UTC string (the file's modification time when the line had
    none). A ``tool`` turn carries only ``results`` (Claude Code writes tool results as user lines)."""

    index: int
    line: int
    offset: int  # the byte offset of its line in the file
    role: str
    text: str
    time: str
    session_id: str
    cwd: str = ""
    branch: str = ""
    sidechain: bool = False
    tools: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` within ``limit`` characters; a longer one is cut at a word boundary with the cut stated. A
    NUL, which no memory file or commit may hold (a candidate accepted from it could not be written), is
    kept as U+FFFD.

    The statement is ASCII (``[...N characters cut]``): an ellipsis character there ("…", which NFKC
    spells "...") made every cut piece a text the screens must normalise, and the secret scanner then
    scanned its normalised copy in full again (a quarter of its time on a 10 MB transcript)."""
    text = text.replace("\x00", "\ufffd").strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", limit // 2)
    head = head[:space] if space > 0 else head
    return f"{head} [...{len(text) - len(head)} characters cut]"


def first_lines(text: str, lines: int = ERROR_LINES, limit: int = MAX_ERROR_CHARS) -> str:
    """The first non-empty lines of a tool's output (an error's message), joined by `` | ``, cut."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][:lines]
    return cut(" | ".join(kept), limit)


def field(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """A transcript's provenance value (``cwd``, ``gitBranch``, a file a tool touched, the transcript's own
    path) as evidence keeps it: every secret masked, each control character written as its escape
    (``\\x1b``), at most ``limit`` characters. A transcript is untrusted input in every field, not only in
    what was said; this is the one place its names are made safe to store and show."""
    from ee.policy.secrets import mask_text

    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", mask_text(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."  # (ASCII: see cut)


def session_name(raw: str) -> str:
    """A session id as ee keeps it: the transcript's ``sessionId`` (or file stem) with secrets masked and
    every character but letters, digits and ``._:@+-`` (a path separator, ``..`` at the start, NUL, a
    control) replaced by ``_``; at most :data:`MAX_SESSION_CHARS`, never empty. ``ee sessions show``,
    ``forget`` and a memory's ``source: session:ID`` then name it as it was stored."""
    from ee.policy.secrets import mask_text

    name = _SESSION_CHAR.sub("_", mask_text(raw))[:MAX_SESSION_CHARS].lstrip(".")
    return name or "session"
