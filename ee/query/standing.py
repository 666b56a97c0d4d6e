"""A memory's standing: the factors that move its rank once retrieval has scored it.

``final = fused × confidence × freshness × trust × validity``, each factor a multiplier near 1 so that
retrieval decides and standing breaks near-ties (tuned so the development set's ranking is unchanged when
every memory has the same standing):

- confidence: ``0.3 + 0.7 × effective``, the frontmatter prior moved by feedback events
  (ee.policy.feedback);
- freshness: ``0.8 + 0.2 × 0.5^(age / half-life)``, with level half-lives (working 1 d … procedural 365 d);
- trust: authoritative 1.0, advisory 0.9, legacy evidence 0.8, quarantined 0.5 (ee.policy.trust, the
  injection guard);
- validity: 1.0 valid, 0.5 outside its window, 0.25 superseded (relaxed posture): valid_from / valid_to
  at the reference time, and ``supersedes`` links.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ee.policy import feedback, trust
from ee.policy.feedback import FeedbackState as _FeedbackState
from ee.store.ids import parse_time

TRUST_MULTIPLIER = {"authoritative": 1.0, "advisory": 0.9, "legacy_evidence": 0.8}
QUARANTINE_MULTIPLIER = 0.5
INVALID_MULTIPLIER = 0.5
SUPERSEDED_MULTIPLIER = 0.25


@dataclass(frozen=True, slots=True)
class Standing:
    """A memory's standing: trust, confidence, freshness and validity, as ranking weighs them."""

    trust: str
    posture: str  # authoritative | advisory | legacy_evidence
    quarantined: bool
    prior: float
    effective: float
    feedback: _FeedbackState
    freshness: float
    valid: bool
    validity_reason: str
    created: str | None

    def invalid(self, reason: str) -> Standing:
        """This standing, not valid for ``reason``."""
        return replace(self, valid=False, validity_reason=reason)

    def multipliers(self, relaxed_invalid: bool = True) -> dict[str, float]:
        return {
            "confidence": 0.3 + 0.7 * self.effective,
            "freshness": 0.8 + 0.2 * self.freshness,
            "trust": QUARANTINE_MULTIPLIER if self.quarantined else TRUST_MULTIPLIER[self.posture],
            "validity": 1.0 if self.valid or not relaxed_invalid else self._invalid_multiplier(),
        }

    def _invalid_multiplier(self) -> float:
        # A memory another one explicitly supersedes is almost never the answer: it gives way harder than
        # one that merely lies outside its validity window.
        return SUPERSEDED_MULTIPLIER if self.validity_reason.startswith("superseded") else INVALID_MULTIPLIER

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


def resolve_trust(record: dict[str, Any], writer: str) -> str:
    """The frontmatter's trust, capped by who wrote the memory; for a file without one, who wrote it.

    Trust is decided by ee, not claimed: a memory an agent committed since a person last reviewed it
    (``ee memory trust``; ``writer``, from :func:`ee.index.provenance.writer_of`) is at most
    ``agent_assertion``, whatever its ``trust:`` key says and whoever committed it last (a person's tag
    edit is no review), so the injection guard and the advisory posture still apply. So is a version
    not committed yet (``record["committed"]`` False): no commit says who wrote it, and every agent
    has a file tool. A person's hand edit counts once they commit it.
    """
    by_agent = bool(writer) or record.get("committed") is False
    declared = record.get("trust")
    if declared:
        return trust.capped(str(declared), by_agent=by_agent)
    return trust.AGENT_CEILING if by_agent else "human_explicit"


def created_of(record: dict[str, Any], provenance: list[str] | None) -> str | None:
    if record.get("created"):
        return str(record["created"])
    return provenance[1] if provenance else None


def standing_of(
    record: dict[str, Any],
    events: list[dict[str, Any]],
    provenance: list[str] | None,
    writer: str,
    now: datetime,
    reference: datetime,
    superseded_by: str | None = None,
) -> Standing:
    return with_validity(
        settled_standing(record, events, provenance, writer, now), window_of(record), reference, superseded_by
    )


def settled_standing(
    record: dict[str, Any],
    events: list[dict[str, Any]],
    provenance: list[str] | None,
    writer: str,
    now: datetime,
) -> Standing:
    """The standing as if valid: everything but validity, which alone depends on the reference time.

    Same record, events, provenance and day, same value: a long-lived process (``ee watch``'s server)
    keeps it per generation and day instead of folding the feedback of ~400 candidates on every query.
    """
    cls = resolve_trust(record, writer)
    prior = record["confidence"] if record.get("confidence") is not None else trust.initial_confidence(cls)
    state = _plain_state(float(prior)) if not events else None
    if state is None:
        state = feedback.effective_confidence(float(prior), events, feedback_cutoff(now))
    created = created_of(record, provenance)
    fresh = 1.0
    if created:
        fresh = feedback.freshness(
            record["level"], record["kind"], _parsed_time(created), now, state.last_confirmed
        )
    quarantined = bool(record.get("injection", {}).get("flagged")) and not trust.is_human(cls)
    posture = trust.posture(cls)
    if quarantined or record.get("conflict"):  # (two texts from a merge: advisory until resolved)
        posture = "advisory"
    return Standing(
        cls, posture, quarantined, float(prior), state.effective, state, fresh, True, "valid", created
    )


_PLAIN: dict[float, feedback.FeedbackState] = {}  # prior → the state of a memory without feedback events
_TIMES: dict[str, datetime] = {}  # creation time as written → parsed (a few thousand distinct values)


def _plain_state(prior: float) -> feedback.FeedbackState | None:
    """What :func:`ee.policy.feedback.effective_confidence` gives a memory without events: a function of
    the prior alone (no event, so neither the day nor the cutoff enters), computed once per prior value
    (ranking asks for ~400 memories per query, most without feedback). None for a prior it would refuse,
    or 0.0 (whose sign the state keeps, and ``0.0 == -0.0`` as a key)."""
    state = _PLAIN.get(prior)
    if state is None:
        if prior == 0.0 or not 0.0 <= prior <= 1.0:
            return None
        from datetime import UTC

        state = _PLAIN[prior] = feedback.effective_confidence(prior, [], datetime(2000, 1, 1, tzinfo=UTC))
    return state


def _parsed_time(text: str) -> datetime:
    parsed = _TIMES.get(text)
    if parsed is None:
        if len(_TIMES) > 100_000:  # bounded in a long-lived process
            _TIMES.clear()
        parsed = _TIMES[text] = parse_time(text)
    return parsed


Window = tuple[str | None, str | None]


def window_of(record: dict[str, Any]) -> Window:
    """``(valid_from, valid_to)``: what validity reads of a record."""
    return record.get("valid_from"), record.get("valid_to")


def with_validity(
    settled: Standing, window: Window, reference: datetime, superseded_by: str | None
) -> Standing:
    """``settled`` (from :func:`settled_standing`) with its validity at ``reference``; itself when valid."""
    valid, reason = window_validity(window, reference)
    if valid and superseded_by:
        valid, reason = False, f"superseded by {superseded_by}"
    return settled if valid else settled.invalid(reason)


def feedback_cutoff(now: datetime) -> datetime:
    """Feedback counts every event up to the end of ``now``'s UTC day (``now`` is the day the ranking runs
    on): an outcome recorded this morning moves this afternoon's ranking, and output stays stable all day."""
    return now.replace(hour=23, minute=59, second=59)


def superseded_map(records: list[dict[str, Any]], trust_of: Callable[[str], str | None]) -> dict[str, str]:
    """Memory id → the id of a memory that supersedes it (a ``supersedes`` link pointing at it).

    A superseded memory is treated like one outside its validity window: flagged and halved under the
    relaxed posture, dropped under strict, left out of packs. A link counts only from a memory trusted at
    least as much as its target (:func:`ee.policy.trust.may_act_on`; ``trust_of`` gives the class ee
    grants a memory id, None when it is not in the index): an agent's file cannot retire a person's rule.
    """
    out: dict[str, str] = {}
    for record in records:
        for link_type, target in record.get("links", ()):
            if link_type not in trust.HIDING_LINKS or target == record["id"] or target in out:
                continue
            source_trust, target_trust = trust_of(record["id"]), trust_of(target)
            if source_trust and target_trust and trust.may_act_on(source_trust, target_trust):
                out[target] = record["id"]
    return out


def window_validity(window: Window, reference: datetime) -> tuple[bool, str]:
    start, end = window
    if start and parse_time(start) > reference:
        return False, f"not valid until {start}"
    if end and parse_time(end) <= reference:
        return False, f"expired at {end}"
    return True, "valid"
