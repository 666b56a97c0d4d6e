"""Feedback and decay math: how outcome events move a memory's confidence, and how its freshness fades.

Feedback events are stored append-only, so concurrent feedback from several clones merges by union. One event:

    {"id": "evt_01JE5...", "memory": "mem_01JE4...", "signal": "harmful",
     "at": "2026-12-02T09:11:11Z", "source": "agent:codex", "reason": "the flag was renamed"}

**Confidence model: Beta evidence counts.** The prior confidence ``p`` is worth :data:`PRIOR_STRENGTH` (4)
pseudo-events: ``alpha = 4p`` for, ``beta = 4(1 - p)`` against. Each applied event adds its weight times its
age decay ``0.5 ** (age_days / 180)`` to ``alpha`` (helpful, confirmation: weight 1.0) or to ``beta``
(harmful, contradiction, inaccurate: 2.5; stale, outdated: 1.0). ``effective = alpha / (alpha + beta)``.
Only the first ``confirmation`` of each source counts (``ee remember`` of a memory already in the store
records one): saying the same thing again does not make it truer.

Worked example, prior 0.5 (an ``agent_assertion``): alpha = 2, beta = 2.

* one ``helpful`` event today: alpha = 3, effective = 3 / 5 = 0.6
* one ``harmful`` event today instead: beta = 4.5, effective = 2 / 6.5 = 0.307692
* both, the harmful one 180 days old: beta = 2 + 2.5 * 0.5 = 3.25, effective = 3 / 6.25 = 0.48

A strong prior resists a single complaint: prior 0.85 → alpha = 3.4, beta = 0.6; one harmful today →
3.4 / 6.5 = 0.523077. Four pseudo-events is deliberately light: a handful of real outcomes should outweigh
whatever the author guessed.

**Burst rule.** More than :data:`BURST_LIMIT` (3) negative events (any of harmful, contradiction, inaccurate,
stale, outdated) from one ``source`` within :data:`BURST_WINDOW` (one hour, both ends inclusive) form a burst:
the first event of the burst is applied, the rest are held back and listed in ``held_back``. A misbehaving
agent looping on ``ee outcome --signal harmful`` therefore costs a memory one harmful event, not twenty.

**Determinism.** Events are sorted by ``(at, id)``; duplicate ids (a union merge can repeat an event) count
once; events dated after ``now`` are ignored (they had not happened at an ``asOf`` time); malformed events are
skipped and described in ``notes``. Same inputs, same output; ``effective`` is rounded to 6 decimals.

**Freshness** decays by level: ``0.5 ** (age / half_life)`` with the half-lives in :data:`HALF_LIVES`, age
counted from the later of creation and last confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ee.errors import UsageError

# Events are read and written in the one time form ee uses everywhere (a bad or out-of-range time is a
# ValueError): ``YYYY-MM-DDTHH:MM:SSZ`` in UTC, naive meaning UTC.
from ee.store.ids import as_utc as _as_utc
from ee.store.ids import format_time as format_time
from ee.store.ids import parse_time as parse_time
from ee.values import LEVELS, SIGNALS

SIGNAL_WEIGHTS: dict[str, float] = {
    "helpful": 1.0,
    "confirmation": 1.0,
    "harmful": 2.5,
    "contradiction": 2.5,
    "inaccurate": 2.5,
    "stale": 1.0,
    "outdated": 1.0,
}
"""Evidence each signal adds (unsigned); see the polarity sets below."""

POSITIVE_SIGNALS: frozenset[str] = frozenset({"helpful", "confirmation"})
HARMFUL_SIGNALS: frozenset[str] = frozenset({"harmful", "contradiction", "inaccurate"})
STALE_SIGNALS: frozenset[str] = frozenset({"stale", "outdated"})
NEGATIVE_SIGNALS: frozenset[str] = HARMFUL_SIGNALS | STALE_SIGNALS

PRIOR_STRENGTH = 4.0
EVENT_HALF_LIFE_DAYS = 180.0
BURST_LIMIT = 3
BURST_WINDOW = timedelta(hours=1)

HALF_LIVES: dict[str, float] = {
    "working": 1.0,
    "episodic": 30.0,
    "episodic_failure": 90.0,
    "semantic": 180.0,
    "procedural": 365.0,
}
"""Freshness half-lives in days. ``episodic_failure`` applies to episodic memories of a kind in
:data:`FAILURE_KINDS`: what went wrong stays relevant three times longer than what merely happened."""

FAILURE_KINDS: frozenset[str] = frozenset({"failure"})

_DAY = 86400.0


class UnknownSignal(UsageError, ValueError):
    code = "unknown_signal"


class UnknownLevel(UsageError, ValueError):
    code = "unknown_level"


@dataclass(frozen=True, slots=True)
class FeedbackState:
    """The derived standing of one memory after its feedback events.

    ``helpful`` counts applied positive events (helpful, confirmation), ``harmful`` applied harmful-type
    events (harmful, contradiction, inaccurate), ``stale`` applied stale/outdated events. ``last_confirmed``
    is the time of the latest applied ``confirmation`` event: pass it to :func:`freshness`.
    """

    effective: float
    prior: float
    helpful: int = 0
    harmful: int = 0
    stale: int = 0
    applied: tuple[str, ...] = ()
    held_back: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    last_confirmed: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "effective": self.effective,
            "prior": self.prior,
            "helpful": self.helpful,
            "harmful": self.harmful,
            "stale": self.stale,
            "applied": list(self.applied),
            "held_back": list(self.held_back),
            "notes": list(self.notes),
            "last_confirmed": format_time(self.last_confirmed) if self.last_confirmed else None,
        }


def validate_signal(signal: str) -> str:
    """Return ``signal`` if it is one of :data:`SIGNALS`, else raise :class:`UnknownSignal` (a ValueError)."""
    if signal not in SIGNAL_WEIGHTS:
        allowed = ", ".join(SIGNALS)
        raise UnknownSignal(
            f"unknown feedback signal {signal!r}; expected one of: {allowed}",
            hint=f"use --signal with one of: {allowed}",
            details={"value": signal, "allowed": list(SIGNALS)},
        )
    return signal


def new_event(
    *,
    event_id: str,
    memory: str,
    signal: str,
    at: datetime,
    source: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """Build a validated, JSON-serialisable event dict (the caller supplies the id, e.g. a ULID)."""
    return {
        "id": event_id,
        "memory": memory,
        "signal": validate_signal(signal),
        "at": format_time(at),
        "source": source,
        "reason": reason,
    }


def effective_confidence(prior: float, events: list[dict[str, Any]], now: datetime) -> FeedbackState:
    """Fold one memory's feedback ``events`` into its effective confidence at ``now`` (see the module doc).

    >>> from datetime import datetime, UTC
    >>> now = datetime(2026, 12, 2, tzinfo=UTC)
    >>> ev = [{"id": "e1", "memory": "m", "signal": "helpful", "at": "2026-12-02T00:00:00Z", "source": "x"}]
    >>> effective_confidence(0.5, ev, now).effective
    0.6
    """
    if not 0.0 <= prior <= 1.0:  # also rejects NaN
        raise ValueError(f"prior confidence must be within 0..1, got {prior!r}")
    now = _as_utc(now)
    notes: list[str] = []
    usable = _usable_events(events, now, notes)
    held = _burst_held_back(usable, notes)
    alpha = prior * PRIOR_STRENGTH
    beta = (1.0 - prior) * PRIOR_STRENGTH
    counts = {"helpful": 0, "harmful": 0, "stale": 0}
    applied: list[str] = []
    last_confirmed: datetime | None = None
    confirmed_by: set[str] = set()
    for at, event_id, signal, source in usable:
        if event_id in held:
            continue
        if signal == "confirmation":  # one per actor counts: repeating a memory cannot raise it
            if source in confirmed_by:
                continue
            confirmed_by.add(source)
        weight = SIGNAL_WEIGHTS[signal] * _decay(at, now)
        applied.append(event_id)
        if signal in POSITIVE_SIGNALS:
            alpha += weight
            counts["helpful"] += 1
            if signal == "confirmation":
                last_confirmed = at
        else:
            beta += weight
            counts["harmful" if signal in HARMFUL_SIGNALS else "stale"] += 1
    if counts["stale"]:
        notes.append(f"{counts['stale']} stale/outdated signal(s): review whether this memory still holds")
    held_ids = tuple(event_id for _at, event_id, _signal, _source in usable if event_id in held)
    return FeedbackState(
        effective=round(alpha / (alpha + beta), 6),
        prior=prior,
        helpful=counts["helpful"],
        harmful=counts["harmful"],
        stale=counts["stale"],
        applied=tuple(applied),
        held_back=held_ids,
        notes=tuple(notes),
        last_confirmed=last_confirmed,
    )


_Usable = tuple[datetime, str, str, str]  # (at, id, signal, source)


def _usable_events(events: list[dict[str, Any]], now: datetime, notes: list[str]) -> list[_Usable]:
    """Validate, de-duplicate and sort events by (at, id); drop future ones. Problems go to ``notes``."""
    parsed: list[_Usable] = []
    for event in events:
        item = _parse_event(event, notes)
        if item is not None:
            parsed.append(item)
    parsed.sort(key=lambda item: (item[0], item[1]))
    seen: set[str] = set()
    usable: list[_Usable] = []
    future = 0
    for item in parsed:
        if item[1] in seen:
            notes.append(f"event {item[1]}: duplicate id, counted once")
            continue
        seen.add(item[1])
        if item[0] > now:
            future += 1
            continue
        usable.append(item)
    if future:
        notes.append(f"{future} event(s) dated after {format_time(now)} ignored")
    return usable


def _parse_event(event: dict[str, Any], notes: list[str]) -> _Usable | None:
    event_id = event.get("id")
    if not isinstance(event_id, str) or not event_id:
        notes.append(f"event without an id skipped: {event!r}")
        return None
    signal = event.get("signal")
    if signal not in SIGNAL_WEIGHTS:
        notes.append(f"event {event_id}: unknown signal {signal!r}, skipped")
        return None
    try:
        at = parse_time(str(event.get("at", "")))
    except ValueError:
        notes.append(f"event {event_id}: bad time {event.get('at')!r}, skipped")
        return None
    source = event.get("source")
    return at, event_id, str(signal), source if isinstance(source, str) and source else "unknown"


def _burst_held_back(usable: list[_Usable], notes: list[str]) -> set[str]:
    """Ids held back by the burst rule, computed per source over its negative events (already sorted)."""
    by_source: dict[str, list[_Usable]] = {}
    for item in usable:
        if item[2] in NEGATIVE_SIGNALS:
            by_source.setdefault(item[3], []).append(item)
    held: set[str] = set()
    for source in sorted(by_source):
        burst_held = _held_in_stream(by_source[source])
        if burst_held:
            held.update(burst_held)
            notes.append(
                f"{len(burst_held)} negative event(s) from {source} held back: more than {BURST_LIMIT} "
                f"within {int(BURST_WINDOW.total_seconds() // 60)} min (burst rule)"
            )
    return held


def _held_in_stream(stream: list[_Usable]) -> list[str]:
    """Mark every event inside a window of ≤ 1 h holding more than BURST_LIMIT events, then keep the first
    event of each run of marked events (runs split where two marked events are more than 1 h apart)."""
    in_burst = [False] * len(stream)
    start = 0
    for end, item in enumerate(stream):
        while item[0] - stream[start][0] > BURST_WINDOW:
            start += 1
        if end - start + 1 > BURST_LIMIT:
            for index in range(start, end + 1):
                in_burst[index] = True
    held: list[str] = []
    previous: datetime | None = None
    for index, item in enumerate(stream):
        if not in_burst[index]:
            continue
        if previous is not None and item[0] - previous <= BURST_WINDOW:
            held.append(item[1])
        previous = item[0]
    return held


def _decay(at: datetime, now: datetime) -> float:
    """Weight multiplier for an event's age: 1.0 today, 0.5 at 180 days, 0.25 at 360 days."""
    age_days = max(0.0, (now - at).total_seconds() / _DAY)
    return float(0.5 ** (age_days / EVENT_HALF_LIFE_DAYS))


def half_life_days(level: str, kind: str) -> float:
    """The freshness half-life for a memory: 90 d for an episodic ``failure``, else by level."""
    if level not in HALF_LIVES or level == "episodic_failure":
        allowed = ", ".join(LEVELS)
        raise UnknownLevel(
            f"unknown memory level {level!r}; expected one of: {allowed}",
            hint=f"set level to one of: {allowed}",
            details={"value": level, "allowed": list(LEVELS)},
        )
    if level == "episodic" and kind in FAILURE_KINDS:
        return HALF_LIVES["episodic_failure"]
    return HALF_LIVES[level]


def freshness(
    level: str, kind: str, created: datetime, now: datetime, last_confirmed: datetime | None = None
) -> float:
    """``0.5 ** (age / half_life)``, age counted from the later of ``created`` and ``last_confirmed``.

    Worked examples: a semantic fact created 180 days ago → 0.5; the same fact confirmed 90 days ago →
    0.5 ** 0.5 = 0.7071; a working note two days old → 0.25; an episodic failure 90 days old → 0.5 (an
    ordinary episodic memory of that age → 0.125). A time in the future counts as age 0 (freshness 1.0).
    """
    half_life = half_life_days(level, kind)
    start = _as_utc(created)
    if last_confirmed is not None:
        start = max(start, _as_utc(last_confirmed))
    age_days = max(0.0, (_as_utc(now) - start).total_seconds() / _DAY)
    return float(0.5 ** (age_days / half_life))
