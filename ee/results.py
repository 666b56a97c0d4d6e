"""What the library's reads return: typed answers, turned into ee.response.v1 JSON only at the edges.

``Workspace.search`` returns a :class:`SearchResult` of :class:`Hit`, ``Workspace.context`` a :class:`Pack`
of :class:`PackSection` and :class:`PackItem` (with :class:`Omitted` entries), ``Workspace.why`` an
:class:`Explanation`; the review queue a :class:`Queue` of candidates and a :class:`Review` of one. A
front end reads their attributes; the command line, MCP and the warm server turn them into JSON with
``to_json()``, the one path from each type to its ``data`` object.

**Exact bytes.** An answer shows a different set of keys for different requests (``output.fields``
minimal / summary / standard / full, ``--explain``, an evidence hit's own keys), and its bytes are a
contract (``tests/test_contract*.py``). So each result keeps ``shown``: the keys its answer shows, in
their order, as the pipeline chose them; ``to_json`` writes exactly those. A key not shown has its
field's empty value (None, ``()``, ``{}``), which is not the same as a shown ``null``.

**The warm server** sends ``to_json()`` (:func:`ee.operations.run`: the same ``data`` the command line
prints), and the front end that asked rebuilds the result with :meth:`Result.from_json`
(:func:`ee.operations.answer`): ``from_json(x.to_json()) == x`` and ``from_json(d).to_json() == d``, so
a served answer is the same object, and the same bytes, as one computed in-process. That is simpler than
a second wire format: the JSON a front end prints is already complete, and the round trip is the one a
test pins (tests/test_results.py). The review queue's types are not served: they only go one way.

Nested blocks that only renderers and agents read (a hit's score ``components`` and ``factors``, its
``provenance``, ``explanation`` and ``memory`` block; why's ``standing`` and ``links``) stay JSON objects
(:data:`JsonObject`); each is built in one place in the pipeline (ee.query.explain, ee.ops.why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, ClassVar, Literal, Self

from ee.curate.model import Candidate

JsonObject = Mapping[str, Any]
# One entry of an answer's ``degraded`` list (code, severity, message, repair; ee.model.Problem's shape):
# a plain dict, as the envelope masks and writes it.
Degradation = dict[str, Any]

HitType = Literal["memory", "evidence"]
Posture = Literal["authoritative", "advisory", "legacy_evidence"]
Fields = Literal["minimal", "summary", "standard", "full"]
# The setting that cut a search's page short (ee.query.engine._truncated_by).
TruncatedBy = Literal["budget.maxTokens", "pagination.limit", "budget.maxResults"]


class Result:
    """A typed answer (or a part of one): a frozen, slotted dataclass with ``shown``, the keys its JSON
    shows in order. ``NESTED`` names the fields holding results (one, or a tuple of them), by their type;
    ``TUPLES`` the fields holding a JSON list of plain values."""

    __slots__ = ()
    NESTED: ClassVar[Mapping[str, type[Result]]] = {}
    TUPLES: ClassVar[frozenset[str]] = frozenset()
    shown: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The ee.response.v1 object of this result: the keys of ``shown``, in order."""
        return {key: _plain(getattr(self, key)) for key in self.shown}

    def envelope_parts(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(``data``, ``degraded``) of the ee.response.v1 envelope: an answer carries its degradations
        inside; the envelope holds them beside its data."""
        data = self.to_json()
        return data, data.pop("degraded", [])

    @classmethod
    def from_json(cls, data: JsonObject) -> Self:
        """The result whose :meth:`to_json` is ``data`` (an answer as the pipeline or the warm server
        wrote it). A key this type does not know is a bug: TypeError."""
        # (mypy takes a class for not Hashable: functools.cache keys on it all the same)
        unknown = data.keys() - _keys(cls)  # type: ignore[arg-type]
        if unknown:
            raise TypeError(f"{cls.__name__} has no {', '.join(sorted(unknown))}")
        values = {key: _typed(cls, key, value) for key, value in data.items()}
        return cls(**(values | {"shown": tuple(data)}))


@cache
def _keys(cls: type[Result]) -> frozenset[str]:
    """The JSON keys a result type knows: its fields but ``shown``."""
    return frozenset(f.name for f in fields(cls) if f.name != "shown")  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _typed(cls: type[Result], key: str, value: Any) -> Any:
    nested = cls.NESTED.get(key)
    if nested is not None and value is not None:
        if isinstance(value, list):
            return tuple(nested.from_json(item) for item in value)
        return nested.from_json(value)
    if key in cls.TUPLES and isinstance(value, list):
        return tuple(value)
    return value


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


@dataclass(frozen=True, slots=True)
class Explanation(Result):
    """The answer of ``ee why``: a memory's standing, links, injection verdict and history; with a
    query, its rank there and what a pack would do with it (``query``)."""

    TUPLES = frozenset({"tags", "events_elsewhere", "degraded"})

    id: str = ""
    title: str = ""
    path: str = ""
    level: str = ""
    kind: str = ""
    tags: tuple[str, ...] = ()
    standing: JsonObject = field(default_factory=dict)
    links: JsonObject = field(default_factory=dict)
    injection: JsonObject = field(default_factory=dict)
    history: JsonObject = field(default_factory=dict)
    query: JsonObject | None = None
    events_elsewhere: tuple[JsonObject, ...] = ()
    degraded: tuple[Degradation, ...] = ()
    shown: tuple[str, ...] = ()


# ---- the review queue (ee.curate): its candidates are ee.curate.model.Candidate, which has its own
# to_dict(), the candidate files' format too


@dataclass(frozen=True, slots=True)
class Queue:
    """The candidates a person is asked to review (``ee curate list``, and what ``propose`` added)."""

    candidates: tuple[Candidate, ...] = ()

    @property
    def by_type(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for candidate in self.candidates:
            counts[candidate.type] = counts.get(candidate.type, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "count": len(self.candidates),
            "by_type": self.by_type,
            "candidates": [c.to_dict() for c in self.candidates],
        }


ReviewStatus = Literal["pending", "accepted", "rejected", "snoozed"]


@dataclass(frozen=True, slots=True)
class Change:
    """What accepting a candidate would do: its action, a summary line per change, the files the commit
    writes and their unified diff."""

    action: str
    summary: tuple[str, ...]
    files: tuple[str, ...]
    diff: str

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "summary": list(self.summary),
            "files": list(self.files),
            "diff": self.diff,
        }


@dataclass(frozen=True, slots=True)
class Review:
    """One candidate as ``ee curate show`` presents it: its status (and the decision behind it), what each
    action does, and exactly what accepting it would change, or why it cannot be accepted."""

    candidate: Candidate
    status: ReviewStatus = "pending"
    decision: JsonObject | None = None  # (a snoozed candidate back in the queue keeps its decision)
    action_help: Mapping[str, str] = field(default_factory=dict)
    would_change: Change | None = None
    cannot_accept: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.candidate.to_dict() | {"status": self.status}
        if self.decision is not None:
            out["decision"] = self.decision
        out["action_help"] = dict(self.action_help)
        out["would_change"] = None if self.would_change is None else self.would_change.to_json()
        if self.cannot_accept is not None:
            out["cannot_accept"] = self.cannot_accept
        return out


# ---- imported agent sessions (ee.sessions): private evidence under .ee/sessions/


@dataclass(frozen=True, slots=True)
class Session(Result):
    """One imported session (``ee sessions list``): how many pieces of evidence, from when to when, from
    which transcripts, in which folder and branch."""

    TUPLES = frozenset({"transcripts"})

    session_id: str = ""
    evidence: int = 0
    first: str | None = None
    last: str | None = None
    transcripts: tuple[str, ...] = ()
    cwd: str | None = None
    branch: str | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EvidencePiece(Result):
    """One piece of session evidence: its id, its text (secrets masked), where it was said, its flags
    (secret_masked, quarantined, sidechain)."""

    TUPLES = frozenset({"flags"})

    id: str = ""
    text: str = ""
    provenance: JsonObject = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionEvidence(Result):
    """A session's evidence, or one piece of it (``ee sessions show``)."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {"evidence": EvidencePiece}

    session_id: str = ""
    evidence: tuple[EvidencePiece, ...] = ()
    shown: tuple[str, ...] = ()
