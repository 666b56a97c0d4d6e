"""A memory body that holds several versions of its text: the form the merge driver writes, read back.

When two clones change a memory's text in ways git cannot merge line by line, the merge driver keeps
every version, each under a label naming who wrote it and in which commit, and sets ``conflict: true``::

    <!-- ee:conflict: 2 versions of this text; keep one: ee memory resolve ID --pick local|remote|both -->

    <!-- ee:version by Alice, commit 1a2b3c4d5e6f, 2026-12-03T10:00:00+00:00 -->
    Deploy with make release.

    <!-- ee:version by Bob, commit 9f8e7d6c5b4a, 2026-12-03T10:05:00+00:00 -->
    Deploy with the deploy.sh script.

    <!-- ee:end of versions -->

The labels are HTML comments: plain to read in an editor or a terminal, invisible when Markdown is rendered,
never git's ``<<<<<<<`` markers (which ``ee sync`` would otherwise push for everyone). A memory's title skips
them (:func:`ee.model.title_of`), so it reads as the first version's title.
Pure text in, text out: no I/O, stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = "<!-- ee:conflict: "
END = "<!-- ee:end of versions -->"
_VERSION_RE = re.compile(
    r"^<!-- ee:version by (?P<author>.*), commit (?P<commit>[0-9a-f]{4,40}|none)(?:, (?P<date>[^,]*))? -->$"
)
_GIT_MARKER_RE = re.compile(r"^(?:<{7}|>{7})(?: |$)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Version:
    """One side's text, with who wrote it and in which commit (``None``: not known)."""

    author: str
    commit: str | None
    date: str
    body: str

    def label(self) -> str:
        return f"{self.author}, commit {self.commit[:12] if self.commit else 'none'}"

    def to_dict(self) -> dict[str, str | None]:
        return {"author": self.author, "commit": self.commit, "date": self.date, "body": self.body}


def render(memory_id: str, versions: list[Version]) -> str:
    """The body holding ``versions`` (at least two), each under its label."""
    command = f"ee memory resolve {memory_id} --pick local|remote|both"
    out = [f"{HEADER}{len(versions)} versions of this text; keep one: {command} -->\n"]
    for version in versions:
        author = _one_line(version.author) or "unknown"
        date = f", {_one_line(version.date)}" if version.date else ""
        out.append(f"\n<!-- ee:version by {author}, commit {version.commit or 'none'}{date} -->\n")
        out.append(_trim(version.body) + "\n")
    out.append(f"\n{END}\n")
    return "".join(out)


def parse(body: str) -> list[Version] | None:
    """The versions of a body ``render`` wrote (hand edits inside a version are fine); None when the
    body is not one (no header, no end, text outside the versions, fewer than two)."""
    lines = body.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or not lines[start].startswith(HEADER):
        return None
    versions: list[Version] = []
    current: list[str] | None = None
    head: re.Match[str] | None = None
    for i in range(start + 1, len(lines)):
        bare = lines[i].strip()
        match = _VERSION_RE.match(bare)
        if match or bare == END:
            if head is not None and current is not None:
                versions.append(_version(head, current))
            if bare == END:
                rest = "".join(lines[i + 1 :])
                return versions if len(versions) >= 2 and not rest.strip() else None
            head, current = match, []
        elif current is not None:
            current.append(lines[i])
        elif bare:
            return None  # text between the header and the first version
    return None


def flatten(body: str, side: Version) -> list[Version]:
    """A side's versions: its body's if it already holds several (a conflict met again), else itself."""
    return parse(body) or [side]


def unite(*groups: list[Version]) -> list[Version]:
    """The versions of all groups, in order, without repeating a text."""
    out: list[Version] = []
    seen: set[str] = set()
    for group in groups:
        for version in group:
            key = _trim(version.body)
            if key not in seen:
                seen.add(key)
                out.append(version)
    return out


def git_marker_line(text: str) -> int | None:
    """The line (from 1) of git's first conflict marker in ``text``, or None."""
    found = _GIT_MARKER_RE.search(text)
    return None if found is None else text.count("\n", 0, found.start()) + 1


def has_git_markers(text: str) -> bool:
    """Whether ``text`` holds git's conflict markers (a text merge that stopped)."""
    return _GIT_MARKER_RE.search(text) is not None


def is_conflicted(body: str, flagged: object = None) -> bool:
    """A memory needs resolving: flagged ``conflict: true``, holding versions, or git's markers."""
    return bool(flagged) or parse(body) is not None or has_git_markers(body)


def _version(head: re.Match[str], lines: list[str]) -> Version:
    commit = head["commit"]
    return Version(
        head["author"], None if commit == "none" else commit, head["date"] or "", _trim("".join(lines)) + "\n"
    )


def _trim(text: str) -> str:
    return text.strip("\n").rstrip()


def _one_line(text: str) -> str:
    return " ".join(text.replace("-->", "->").split())
