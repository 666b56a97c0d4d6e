"""The typed turns every transcript reader yields, and the cuts that keep them small."""

from __future__ import annotations

from dataclasses import dataclass

# What one turn keeps of a long text, and of a tool's output: the rest is cut, and the cut is stated.
MAX_TEXT_CHARS = 4000
MAX_COMMAND_CHARS = 400
ERROR_LINES = 3
MAX_ERROR_CHARS = 400
ROLES = ("user", "assistant", "tool")


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
    """``text`` within ``limit`` characters; a longer one is cut at a word boundary with the cut stated.

    The statement is ASCII (``[...N characters cut]``): an ellipsis character there ("…", which NFKC
    spells "...") made every cut piece a text the screens must normalise, and the secret scanner then
    scanned its normalised copy in full again (a quarter of its time on a 10 MB transcript)."""
    text = text.strip()
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
