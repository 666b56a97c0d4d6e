"""What ``Workspace.context`` returns: a :class:`Pack` of :class:`PackSection` and :class:`PackItem`, with
what it left out (:class:`~ee.results.search.Omitted`). See :mod:`ee.results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ee.results import Degradation, Fields, HitType, JsonObject, Posture, Result
from ee.results.search import Omitted


@dataclass(frozen=True, slots=True)
class PackItem(Result):
    """One item of a context pack: a memory (or session evidence, ``type``) in a section, authoritative
    or advisory, with the body as the pack shows it and the tokens it costs."""

    TUPLES = frozenset({"tags", "flags", "marks"})

    id: str = ""
    type: HitType | None = None  # (shown for session evidence only)
    section: str = ""
    authoritative: bool = False
    title: str = ""
    kind: str = ""
    level: str | None = None
    tags: tuple[str, ...] = ()
    trust: str = ""
    posture: Posture | None = None
    confidence: float | None = None
    score: float | None = None
    relevance: float | None = None
    rank: int | None = None
    tokens: int = 0
    truncated: bool = False
    why: str = ""
    flags: tuple[str, ...] = ()
    body: str = ""
    path: str | None = None
    provenance: JsonObject | None = None
    components: JsonObject | None = None
    factors: JsonObject | None = None
    superseded_by: str | None = None
    marks: tuple[str, ...] = ()
    explanation: JsonObject | None = None  # with --explain
    selection: JsonObject | None = None  # with --explain: how the selector picked it
    memory: JsonObject | None = None  # with output.fields full
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackSection(Result):
    """A section of a pack (procedural, decisions, failures, evidence, artifacts, sessions) and its
    items in order."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {"items": PackItem}

    name: str = ""
    title: str = ""
    tokens: int = 0
    items: tuple[PackItem, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackBudget(Result):
    """A pack's token budget: what it may use, what it used, the title line's part, and how it counts."""

    max_tokens: int = 0
    used_tokens: int = 0
    title_tokens: int = 0
    counting: str = ""
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackCounts(Result):
    candidates: int = 0
    items: int = 0
    omitted: int = 0
    omitted_by_reason: Mapping[str, int] = field(default_factory=dict)
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pack(Result):
    """The answer of ``ee context``: a token-budgeted pack for ``task``, in sections, with what it left
    out and its hash (ee.pack)."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {
        "budget": PackBudget,
        "counts": PackCounts,
        "sections": PackSection,
        "omitted": Omitted,
    }
    TUPLES = frozenset({"degraded"})

    task: str = ""
    query: JsonObject = field(default_factory=dict)
    profile: JsonObject = field(default_factory=dict)
    fields: Fields = "standard"
    budget: PackBudget = field(default_factory=PackBudget)
    min_relevance: float = 0.0
    similarity: str = ""
    pack_hash: str = ""
    counts: PackCounts = field(default_factory=PackCounts)
    sections: tuple[PackSection, ...] = ()
    omitted: tuple[Omitted, ...] = ()
    degraded: tuple[Degradation, ...] = ()
    shown: tuple[str, ...] = ()

    @property
    def items(self) -> tuple[PackItem, ...]:
        """Every item, section by section."""
        return tuple(item for section in self.sections for item in section.items)
