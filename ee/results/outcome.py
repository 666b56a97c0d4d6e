"""What ``Workspace.outcome`` returns: :class:`OutcomeReport` (``ee outcome``, a write: never served).

The event, the commit that recorded it, and the effective confidence before and after; the blocks
(``event``, ``memory``, ``effective_confidence``, ``feedback``) stay the JSON objects
:mod:`ee.ops.feedback` builds. See :mod:`ee.results`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ee.results import JsonObject, Result


@dataclass(frozen=True, slots=True)
class OutcomeReport(Result):
    """One feedback event on a memory: ``applied`` or ``held_back`` by the burst rule (then
    ``message`` says why), the effective confidence ``before`` and ``after`` it, the feedback counts."""

    event: JsonObject = field(default_factory=dict)
    events_file: str = ""
    commit: str = ""
    memory: JsonObject = field(default_factory=dict)
    prior_confidence: float = 0.0
    effective_confidence: JsonObject = field(default_factory=dict)
    applied: bool = False
    held_back: bool = False
    feedback: JsonObject = field(default_factory=dict)
    message: str | None = None
    shown: tuple[str, ...] = ()
