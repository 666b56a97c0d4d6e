"""The data ee passes between layers: frozen, slotted dataclasses with ``to_dict()`` matching ``schemas/``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A long operation's report of how far it got: (phase, done, total), total 0 when not known yet. The CLI
# shows it on a terminal (ee.cli.progress); the library never prints.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Link:
    type: str
    to: str

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "to": self.to}


def title_of(body: str) -> str:
    """The first non-empty body line, without Markdown heading marks, cut to 120 characters. ee's own
    labels (``<!-- ee:… -->``, :mod:`ee.git.conflict`) are skipped: a conflicted memory reads as its first
    version's title."""
    for line in body.splitlines():
        text = line.strip()
        if text.startswith("<!-- ee:") and text.endswith("-->"):
            continue
        text = text.lstrip("#").strip()
        if text:
            return text if len(text) <= 120 else text[:119] + "…"
    return ""


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory as read from one version of one file.

    ``created`` and the validity bounds are RFC 3339 UTC strings (``...Z``) or None. ``trust`` may be
    None for a hand-written file without the key: the store fills it from who committed it.
    ``extra`` holds unknown frontmatter keys, kept and reported, never dropped.
    """

    id: str
    body: str
    path: str
    level: str = "semantic"
    kind: str = "fact"
    tags: tuple[str, ...] = ()
    trust: str | None = None
    confidence: float | None = None
    utility: float = 0.5
    importance: float = 0.5
    created: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    source: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    paths: tuple[str, ...] = ()
    redacted: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = ()
    has_frontmatter: bool = True
    body_line: int = 1  # 1-based line of the body's first line in the file

    @property
    def title(self) -> str:
        return title_of(self.body)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "level": self.level,
            "kind": self.kind,
            "tags": list(self.tags),
            "trust": self.trust,
            "confidence": self.confidence,
            "utility": self.utility,
            "importance": self.importance,
            "created": self.created,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "source": list(self.source),
            "links": [link.to_dict() for link in self.links],
            "paths": list(self.paths),
            "redacted": list(self.redacted),
            "extra": dict(self.extra),
            "body": self.body,
        }


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with a file or the store, as ``ee doctor`` and ``degraded`` report it."""

    code: str
    severity: str  # "error" | "warning" | "info"
    message: str
    path: str = ""
    line: int | None = None
    key: str | None = None
    repair: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        if self.path:
            out["path"] = self.path
        if self.line is not None:
            out["line"] = self.line
        if self.key is not None:
            out["key"] = self.key
        out["repair"] = self.repair
        return out


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a memory in git history."""

    commit: str
    date: str
    author: str
    actor: str
    op: str
    message: str
    path: str
    changed: tuple[str, ...]
    deleted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "author": self.author,
            "actor": self.actor,
            "op": self.op,
            "message": self.message,
            "path": self.path,
            "changed": list(self.changed),
            "deleted": self.deleted,
        }


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit: the one an asOf query resolved to."""

    sha: str
    date: str
    author: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"commit": self.sha, "date": self.date, "author": self.author, "message": self.message}
