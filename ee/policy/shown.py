"""What a terminal shows, not obeys: the one rule for the control characters of text ee prints or writes
where a person reads it (text output, logs, commit messages). Text from a memory, a file name, a branch or
a transcript is untrusted: an ESC starts sequences that clear the screen, set the window title or, with
OSC 52, the clipboard; a bidirectional override makes text read in another order than it runs
("Trojan Source")."""

from __future__ import annotations

import re

# C0 controls but tab and newline, a carriage return not ending a line, DEL, C1 controls, and the
# bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` as a terminal shows it, not obeys it: each control character (and bidirectional override)
    a memory's text or a file name may hold (a teammate's file, pulled) written as its escape, ``\\x1b``,
    ``\\u202e``. Every text format a person reads goes through here; JSON escapes the C0 ones itself."""
    if text.isprintable():  # (the usual case: controls, overrides and newlines are not printable)
        return text
    return re.sub(_CONTROL, _escape, text)


def log_line(text: str) -> str:
    """``text`` as one line (a log's line, a commit trailer's value): :func:`visible`, and a newline or
    carriage return written as its escape too, so a name with a newline cannot forge a line of its own."""
    return visible(text).replace("\r", "\\r").replace("\n", "\\n")
