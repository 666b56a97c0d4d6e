"""The review queue (ee.curate): a :class:`Queue` of candidates, a :class:`Review` of one, and what a scan
found (:class:`ScanReport`).

Its candidates are :class:`ee.curate.model.Candidate`, which has its own ``to_dict()``, the candidate
files' format too. These types are not served: they only go one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ee.curate.model import Candidate
from ee.results import JsonObject


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


@dataclass(frozen=True, slots=True)
class ScanReport:
    """``ee curate scan``: how many memories it read, how many candidates it derived (``scanned``), and
    the queue as it stands after (pending candidates, the scan's and the agents' proposals), and the
    proposals it retired, (candidate id, the id of the memory that now says the same) each."""

    memories: int
    scanned: int
    queue: Queue
    retired: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        retired = [{"candidate": candidate, "memory": memory} for candidate, memory in self.retired]
        counts = {"memories": self.memories, "scanned": self.scanned}
        return counts | self.queue.to_json() | {"retired": retired}


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
