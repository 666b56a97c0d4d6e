"""A memory's standing: the factors that move its rank once retrieval has scored it.

``final = fused × confidence × freshness × trust × validity``, each factor a multiplier near 1 so that
retrieval decides and standing breaks near-ties (tuned so the development set's ranking is unchanged when
every memory has the same standing):

| factor | multiplier | from |
|---|---|---|
| confidence | ``0.6 + 0.4 × effective`` | the frontmatter prior moved by feedback events (ee.policy.feedback) |
| freshness | ``0.8 + 0.2 × 0.5^(age / half-life)`` | level half-lives (working 1 d … procedural 365 d) |
| trust | authoritative 1.0, advisory 0.9, legacy evidence 0.8, quarantined 0.5 | ee.policy.trust, injection guard |
| validity | 1.0 valid, 0.5 outside its window (relaxed posture) | valid_from / valid_to at the reference time |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ee.ids import parse_time
from ee.policy import feedback, trust

TRUST_MULTIPLIER = {"authoritative": 1.0, "advisory": 0.9, "legacy_evidence": 0.8}
QUARANTINE_MULTIPLIER = 0.5
INVALID_MULTIPLIER = 0.5


@dataclass(frozen=True, slots=True)
class Standing:
    trust: str
    posture: str  # authoritative | advisory | legacy_evidence
    quarantined: bool
    prior: float
    effective: float
    feedback: feedback.FeedbackState
    freshness: float
    valid: bool
    validity_reason: str
    created: str | None

    def multipliers(self, relaxed_invalid: bool = True) -> dict[str, float]:
        return {
            "confidence": 0.6 + 0.4 * self.effective,
            "freshness": 0.8 + 0.2 * self.freshness,
            "trust": QUARANTINE_MULTIPLIER if self.quarantined else TRUST_MULTIPLIER[self.posture],
            "validity": 1.0 if self.valid or not relaxed_invalid else INVALID_MULTIPLIER,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "trust": self.trust,
            "posture": self.posture,
            "quarantined": self.quarantined,
            "prior_confidence": round(self.prior, 4),
            "effective_confidence": round(self.effective, 4),
            "feedback": {
                "helpful": self.feedback.helpful,
                "harmful": self.feedback.harmful,
                "stale": self.feedback.stale,
                "applied": len(self.feedback.applied),
                "held_back": list(self.feedback.held_back),
                "notes": list(self.feedback.notes),
            },
            "freshness": round(self.freshness, 4),
            "valid": self.valid,
            "validity": self.validity_reason,
        }


def resolve_trust(record: dict[str, Any], provenance: list[str] | None) -> str:
    """The frontmatter's trust; for a file without one, who committed it (an agent trailer → agent)."""
    if record.get("trust"):
        return str(record["trust"])
    actor = provenance[4] if provenance else "human"
    return "agent_assertion" if actor.startswith("agent:") else "human_explicit"


def created_of(record: dict[str, Any], provenance: list[str] | None) -> str | None:
    if record.get("created"):
        return str(record["created"])
    return provenance[1] if provenance else None


def standing_of(
    record: dict[str, Any],
    events: list[dict[str, Any]],
    provenance: list[str] | None,
    now: datetime,
    reference: datetime,
) -> Standing:
    cls = resolve_trust(record, provenance)
    prior = record["confidence"] if record.get("confidence") is not None else trust.initial_confidence(cls)
    state = feedback.effective_confidence(float(prior), events, feedback_cutoff(now))
    created = created_of(record, provenance)
    fresh = 1.0
    if created:
        fresh = feedback.freshness(
            record["level"], record["kind"], parse_time(created), now, state.last_confirmed
        )
    quarantined = bool(record.get("injection", {}).get("flagged")) and not trust.is_human(cls)
    posture = trust.posture(cls)
    if quarantined:
        posture = "advisory"
    valid, reason = validity(record, reference)
    return Standing(
        cls, posture, quarantined, float(prior), state.effective, state, fresh, valid, reason, created
    )


def feedback_cutoff(now: datetime) -> datetime:
    """Feedback counts every event up to the end of ``now``'s UTC day (``now`` is the day the ranking runs
    on): an outcome recorded this morning moves this afternoon's ranking, and output stays stable all day."""
    return now.replace(hour=23, minute=59, second=59)


def validity(record: dict[str, Any], reference: datetime) -> tuple[bool, str]:
    start, end = record.get("valid_from"), record.get("valid_to")
    if start and parse_time(start) > reference:
        return False, f"not valid until {start}"
    if end and parse_time(end) <= reference:
        return False, f"expired at {end}"
    return True, "valid"
