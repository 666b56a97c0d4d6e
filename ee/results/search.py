"""What ``Workspace.search`` returns: a :class:`SearchResult` of :class:`Hit` (and what it left out,
:class:`Omitted`, which a pack's answer uses too). See :mod:`ee.results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ee.results import Degradation, HitType, JsonObject, Posture, Result, TruncatedBy


@dataclass(frozen=True, slots=True)
class Hit(Result):
    """One search hit: a memory, or a piece of session evidence (``type``), with its rank, score,
    relevance (None: the query's mode has no calibrated relevance), and why it ranked there."""

    TUPLES = frozenset({"tags", "flags"})

    id: str = ""
    type: HitType = "memory"
    rank: int | None = None
    score: float = 0.0
    relevance: float | None = None
    title: str = ""
    level: str | None = None  # (evidence has none)
    kind: str = ""
    tags: tuple[str, ...] = ()
    trust: str = ""
    posture: Posture | None = None
    time: str | None = None  # evidence: when it was said
    path: str | None = None
    why: str = ""
    flags: tuple[str, ...] = ()
    body: str = ""
    components: JsonObject | None = None
    factors: JsonObject | None = None
    provenance: JsonObject | None = None
    superseded_by: str | None = None  # evidence: the later piece that replaces it
    explanation: JsonObject | None = None  # with output.explain
    memory: JsonObject | None = None  # with output.fields full
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Omitted(Result):
    """What an answer left out, and why. In a pack: one candidate (``id``, its ``reason``, section,
    scores, title, tokens; ``detail`` of a quota, ``duplicate_of``). In a search: what the relevance floor
    dropped (``reason`` below_relevance_floor, a ``count``; with --explain the ``nearest`` of them)."""

    TUPLES = frozenset({"nearest"})

    reason: str = ""
    id: str | None = None
    count: int | None = None
    nearest: tuple[JsonObject, ...] = ()
    section: str | None = None
    score: float | None = None
    relevance: float | None = None
    title: str | None = None
    tokens: int | None = None
    detail: str | None = None
    duplicate_of: str | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResult(Result):
    """The answer of ``ee search``: a page of hits, the totals, where the next page starts, and what was
    degraded (``degraded``, which the envelope carries beside ``data``)."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {"hits": Hit, "omitted": Omitted}
    TUPLES = frozenset({"degraded"})

    query: JsonObject = field(default_factory=dict)
    total: int = 0
    returned: int = 0
    offset: int = 0
    hits: tuple[Hit, ...] = ()
    truncated: bool = False
    truncated_reason: TruncatedBy | None = None
    next_cursor: str | None = None
    min_relevance: float = 0.0
    omitted: tuple[Omitted, ...] = ()
    eval: JsonObject | None = None  # with an eval block in the query
    degraded: tuple[Degradation, ...] = ()
    shown: tuple[str, ...] = ()
