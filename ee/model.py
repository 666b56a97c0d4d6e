"""The data ee passes between layers: frozen, slotted value classes with ``to_dict()`` matching ``schemas/``.

They behave as ``@dataclass(frozen=True, slots=True)`` classes do (keyword or positional construction,
equality and hash by value, a field-by-field repr, ``FrozenInstanceError`` on assignment, pickling), but
their methods are written out: every ``ee`` process imports this module, and ``dataclass`` generates and
compiles six methods per class at import (~6 ms for these classes, on every fresh ``ee search``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from typing import Any, Self

_set = object.__setattr__

LEVELS = ("working", "episodic", "semantic", "procedural")
KINDS = (
    "rule",
    "fact",
    "decision",
    "failure",
    "command",
    "convention",
    "anti-pattern",
    "risk",
    "playbook-step",
    "preference",
    "observation",
    "artifact",
    "question",
)
LINK_TYPES = ("supports", "contradicts", "derived_from", "supersedes", "related", "co_tag", "co_mention")

# The frontmatter keys ee knows, in the order ee writes them.
KNOWN_KEYS = (
    "id",
    "level",
    "kind",
    "tags",
    "trust",
    "confidence",
    "utility",
    "importance",
    "created",
    "valid_from",
    "valid_to",
    "source",
    "links",
    "paths",
    "redacted",
)


class Value:
    """Equality, hash, repr, immutability and pickling from a subclass's ``__slots__`` (its fields, in
    order), the way a frozen slotted dataclass has them. A subclass writes its ``__init__`` (setting each
    field with ``object.__setattr__``), and costs nothing at import."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.__slots__])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list[Any]:
        return list(self._values())

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self.__slots__, state, strict=True):
            _set(self, name, value)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (field=value), as ``dataclasses.replace`` makes one."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return type(self)(**values)


class Link(Value):
    __slots__ = __match_args__ = ("type", "to")
    type: str
    to: str

    def __init__(self, type: str, to: str) -> None:  # noqa: A002 - the field's name in the file format
        _set(self, "type", type)
        _set(self, "to", to)

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "to": self.to}


class Memory(Value):
    """One memory as read from one version of one file.

    ``created`` and the validity bounds are RFC 3339 UTC strings (``...Z``) or None. ``trust`` may be
    None for a hand-written file without the key: the store fills it from who committed it.
    ``extra`` holds unknown frontmatter keys, kept and reported, never dropped.
    """

    __slots__ = __match_args__ = (
        "id",
        "body",
        "path",
        "level",
        "kind",
        "tags",
        "trust",
        "confidence",
        "utility",
        "importance",
        "created",
        "valid_from",
        "valid_to",
        "source",
        "links",
        "paths",
        "redacted",
        "extra",
        "has_frontmatter",
        "body_line",
    )
    id: str
    body: str
    path: str
    level: str
    kind: str
    tags: tuple[str, ...]
    trust: str | None
    confidence: float | None
    utility: float
    importance: float
    created: str | None
    valid_from: str | None
    valid_to: str | None
    source: tuple[str, ...]
    links: tuple[Link, ...]
    paths: tuple[str, ...]
    redacted: tuple[str, ...]
    extra: tuple[tuple[str, Any], ...]
    has_frontmatter: bool
    body_line: int  # 1-based line of the body's first line in the file

    def __init__(
        self,
        id: str,  # noqa: A002 - the field's name in the file format
        body: str,
        path: str,
        level: str = "semantic",
        kind: str = "fact",
        tags: tuple[str, ...] = (),
        trust: str | None = None,
        confidence: float | None = None,
        utility: float = 0.5,
        importance: float = 0.5,
        created: str | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
        source: tuple[str, ...] = (),
        links: tuple[Link, ...] = (),
        paths: tuple[str, ...] = (),
        redacted: tuple[str, ...] = (),
        extra: tuple[tuple[str, Any], ...] = (),
        has_frontmatter: bool = True,
        body_line: int = 1,
    ) -> None:
        _set(self, "id", id)
        _set(self, "body", body)
        _set(self, "path", path)
        _set(self, "level", level)
        _set(self, "kind", kind)
        _set(self, "tags", tags)
        _set(self, "trust", trust)
        _set(self, "confidence", confidence)
        _set(self, "utility", utility)
        _set(self, "importance", importance)
        _set(self, "created", created)
        _set(self, "valid_from", valid_from)
        _set(self, "valid_to", valid_to)
        _set(self, "source", source)
        _set(self, "links", links)
        _set(self, "paths", paths)
        _set(self, "redacted", redacted)
        _set(self, "extra", extra)
        _set(self, "has_frontmatter", has_frontmatter)
        _set(self, "body_line", body_line)

    @property
    def title(self) -> str:
        """The first non-empty body line, without Markdown heading marks, cut to 120 characters."""
        for line in self.body.splitlines():
            text = line.strip().lstrip("#").strip()
            if text:
                return text if len(text) <= 120 else text[:119] + "…"
        return ""

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


class Problem(Value):
    """Something wrong with a file or the store, as ``ee doctor`` and ``degraded`` report it."""

    __slots__ = __match_args__ = ("code", "severity", "message", "path", "line", "key", "repair")
    code: str
    severity: str  # "error" | "warning" | "info"
    message: str
    path: str
    line: int | None
    key: str | None
    repair: str

    def __init__(
        self,
        code: str,
        severity: str,
        message: str,
        path: str = "",
        line: int | None = None,
        key: str | None = None,
        repair: str = "",
    ) -> None:
        _set(self, "code", code)
        _set(self, "severity", severity)
        _set(self, "message", message)
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "key", key)
        _set(self, "repair", repair)

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


class Version(Value):
    """One version of a memory in git history."""

    __slots__ = __match_args__ = (
        "commit",
        "date",
        "author",
        "actor",
        "op",
        "message",
        "path",
        "changed",
        "deleted",
    )
    commit: str
    date: str
    author: str
    actor: str
    op: str
    message: str
    path: str
    changed: tuple[str, ...]
    deleted: bool

    def __init__(
        self,
        commit: str,
        date: str,
        author: str,
        actor: str,
        op: str,
        message: str,
        path: str,
        changed: tuple[str, ...],
        deleted: bool = False,
    ) -> None:
        _set(self, "commit", commit)
        _set(self, "date", date)
        _set(self, "author", author)
        _set(self, "actor", actor)
        _set(self, "op", op)
        _set(self, "message", message)
        _set(self, "path", path)
        _set(self, "changed", changed)
        _set(self, "deleted", deleted)

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


class CommitInfo(Value):
    """One commit: the one an asOf query resolved to."""

    __slots__ = __match_args__ = ("sha", "date", "author", "message")
    sha: str
    date: str
    author: str
    message: str

    def __init__(self, sha: str, date: str, author: str, message: str) -> None:
        _set(self, "sha", sha)
        _set(self, "date", date)
        _set(self, "author", author)
        _set(self, "message", message)

    def to_dict(self) -> dict[str, str]:
        return {"commit": self.sha, "date": self.date, "author": self.author, "message": self.message}
