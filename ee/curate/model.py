"""The review queue's data: candidates, the evidence behind them, and the memory a candidate would write.

Pure data, no I/O: the contract between the queue (:mod:`ee.curate`) and what proposes to it (its own scans,
session learning in :mod:`ee.sessions`, agents over MCP). A candidate's id is derived from its type and its
subjects only, so the same proposal made twice, by two clones or two scans, is the same candidate, and a
decision on it (reject, snooze, accept) applies wherever it is proposed again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ee.values import CANDIDATE_TYPES as TYPES

# Each type's actions, the default first (what `ee curate accept ID` does without --action).
ACTIONS: dict[str, tuple[str, ...]] = {
    "duplicate": ("forget", "link"),
    "merge": ("forget", "link"),
    "contradiction": ("link", "expire-older", "expire-newer"),
    "update": ("expire-older", "link"),
    "stale-path": ("expire", "forget", "keep"),
    "stale-citation": ("refresh", "expire", "forget"),
    "expired": ("forget", "keep"),
    "harmful": ("expire", "forget"),
    "unused": ("expire", "forget"),
    "agent-write": ("attest", "expire", "forget", "tags", "link", "supersede", "outcome"),
    "session": ("write",),
    "docs": ("write",),
}
assert set(ACTIONS) == set(TYPES)
# The agent-write actions that carry out an agent's refused change as proposed (``Candidate.arguments``):
# offered only by the candidate that holds the proposal (:func:`ee.curate.state.propose_refusal`).
PROPOSED_ONLY = ("tags", "link", "supersede", "outcome")


def offered(type: str) -> tuple[str, ...]:  # noqa: A002 (the contract's name)
    """The actions a candidate of ``type`` offers when no refused change stands behind it."""
    if type != "agent-write":
        return ACTIONS[type]
    return tuple(a for a in ACTIONS[type] if a not in PROPOSED_ONLY)


EVIDENCE_KINDS = ("memory", "evidence", "file", "commit")
PROPOSERS = ("ee", "human")  # or "agent:<name>"

ID_PREFIX = "cand_"
_ID_HEX = 16  # 64 bits of sha256: no collision in any store a person reviews


def candidate_id(type: str, subjects: Iterable[str]) -> str:  # noqa: A002 (the contract's name)
    """``cand_`` + a short hash of the type and the sorted, de-duplicated subjects: the same proposal has the
    same id whatever order its subjects came in and whoever proposed it.

    Raises :class:`ValueError` for an unknown type or no subjects (a candidate is always about something)."""
    if type not in TYPES:
        raise ValueError(f"unknown candidate type {type!r}: one of {', '.join(TYPES)}")
    keys = sorted(set(subjects))
    if not keys:
        raise ValueError("a candidate needs at least one subject")
    # NUL cannot occur in a subject (ids, evidence ids, "file:line"), so the joined text is unambiguous.
    text = "\0".join((type, *keys))
    return ID_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:_ID_HEX]


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    """One piece of what a candidate rests on, shown to the reviewer."""

    kind: str  # "memory" | "evidence" | "file" | "commit"
    ref: str  # memory id / evidence id / "path:line" / commit sha
    excerpt: str  # short, secret-masked text shown to the reviewer
    provenance: Mapping[str, Any] = field(default_factory=dict)  # transcript, session_id, turn, time, …

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "ref": self.ref,
            "excerpt": self.excerpt,
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvidenceRef:
        return cls(
            kind=str(data["kind"]),
            ref=str(data["ref"]),
            excerpt=str(data.get("excerpt", "")),
            provenance=dict(data.get("provenance") or {}),
        )


@dataclass(frozen=True, slots=True)
class NewMemory:
    """What a ``session`` or ``docs`` candidate writes when accepted: an ordinary memory file."""

    body: str
    kind: str
    tags: tuple[str, ...]
    derived_from: tuple[str, ...]  # evidence ids / file:line the memory comes from
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "body": self.body,
            "kind": self.kind,
            "tags": list(self.tags),
            "derived_from": list(self.derived_from),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NewMemory:
        source = data.get("source")
        return cls(
            body=str(data["body"]),
            kind=str(data["kind"]),
            tags=tuple(str(tag) for tag in data.get("tags") or ()),
            derived_from=tuple(str(ref) for ref in data.get("derived_from") or ()),
            source=None if source is None else str(source),
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A change ee, an agent or a session proposes to the store; a person accepts, rejects or snoozes it."""

    id: str  # stable: candidate_id(type, subjects)
    type: str  # one of TYPES
    subjects: tuple[str, ...]  # sorted: memory blob ids, memory ids, evidence ids, "file:line"
    title: str  # one line for the human view
    reason: str  # why ee proposes it (deterministic, explainable)
    evidence: tuple[EvidenceRef, ...]
    default_action: str
    actions: tuple[str, ...]  # default first
    new_memory: NewMemory | None = None
    proposed_by: str = "ee"  # "ee" | "agent:<name>" | "human"
    created: str = ""  # RFC 3339
    arguments: Mapping[str, Any] = field(default_factory=dict)  # an agent's refused change, as it proposed it

    @classmethod
    def make(
        cls,
        type: str,  # noqa: A002 (the field's name)
        subjects: Iterable[str],
        *,
        title: str,
        reason: str,
        evidence: Iterable[EvidenceRef] = (),
        default_action: str,
        actions: Iterable[str] = (),
        new_memory: NewMemory | None = None,
        proposed_by: str = "ee",
        created: str = "",
        arguments: Mapping[str, Any] | None = None,
    ) -> Candidate:
        """A candidate with its id derived, its subjects sorted and its default action first in actions."""
        keys = tuple(sorted(set(subjects)))
        others = tuple(action for action in dict.fromkeys(actions) if action != default_action)
        return cls(
            id=candidate_id(type, keys),
            type=type,
            subjects=keys,
            title=title,
            reason=reason,
            evidence=tuple(evidence),
            default_action=default_action,
            actions=(default_action, *others),
            new_memory=new_memory,
            proposed_by=proposed_by,
            created=created,
            arguments=dict(arguments or {}),
        )

    def problems(self) -> list[str]:
        """What is wrong with a candidate someone else built (an agent, a stored file): empty when sound."""
        found: list[str] = []
        if self.type not in TYPES:
            found.append(f"type {self.type!r} is not one of {', '.join(TYPES)}")
            return found
        if not self.subjects:
            found.append("it has no subjects")
            return found
        if self.id != candidate_id(self.type, self.subjects):
            found.append(f"id {self.id!r} is not candidate_id(type, subjects)")
        if tuple(sorted(set(self.subjects))) != self.subjects:
            found.append("subjects are not sorted and distinct")
        if not self.actions or self.actions[0] != self.default_action:
            found.append("actions must start with default_action")
        if self.type in ("session", "docs") and self.new_memory is None:
            found.append(f"a {self.type} candidate needs new_memory")
        if not (self.proposed_by in PROPOSERS or self.proposed_by.startswith("agent:")):
            found.append(f"proposed_by {self.proposed_by!r} is not ee, human or agent:<name>")
        for ref in self.evidence:
            if ref.kind not in EVIDENCE_KINDS:
                found.append(f"evidence kind {ref.kind!r} is not one of {', '.join(EVIDENCE_KINDS)}")
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "subjects": list(self.subjects),
            "title": self.title,
            "reason": self.reason,
            "evidence": [ref.to_dict() for ref in self.evidence],
            "default_action": self.default_action,
            "actions": list(self.actions),
            "new_memory": None if self.new_memory is None else self.new_memory.to_dict(),
            "proposed_by": self.proposed_by,
            "created": self.created,
            "arguments": dict(self.arguments),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        """The inverse of :meth:`to_dict`. Raises :class:`KeyError`, :class:`TypeError` or :class:`ValueError`
        on a malformed mapping; check :meth:`problems` on the result before trusting it."""
        new_memory = data.get("new_memory")
        return cls(
            id=str(data["id"]),
            type=str(data["type"]),
            subjects=tuple(str(subject) for subject in data["subjects"]),
            title=str(data.get("title", "")),
            reason=str(data.get("reason", "")),
            evidence=tuple(EvidenceRef.from_dict(ref) for ref in data.get("evidence") or ()),
            default_action=str(data["default_action"]),
            actions=tuple(str(action) for action in data.get("actions") or ()),
            new_memory=None if new_memory is None else NewMemory.from_dict(new_memory),
            proposed_by=str(data.get("proposed_by", "ee")),
            created=str(data.get("created", "")),
            arguments=dict(data.get("arguments") or {}),
        )
