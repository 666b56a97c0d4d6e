"""Feedback and decay math (ee.policy.feedback), with the worked numbers computed by hand in comments.

Model reminder: alpha = 4 * prior + sum(weight * decay) over positive events, beta = 4 * (1 - prior) + the
same over negative events, effective = alpha / (alpha + beta); decay = 0.5 ** (age_days / 180).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ee.errors import UsageError
from ee.policy.feedback import (
    HALF_LIVES,
    SIGNALS,
    FeedbackState,
    effective_confidence,
    format_time,
    freshness,
    half_life_days,
    new_event,
    parse_time,
    validate_signal,
)

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def ev(
    event_id: str, signal: str, *, days: float = 0, minutes: float = 0, source: str = "human"
) -> dict[str, Any]:
    at = NOW - timedelta(days=days, minutes=minutes)
    return {
        "id": event_id,
        "memory": "mem_1",
        "signal": signal,
        "at": format_time(at),
        "source": source,
        "reason": None,
    }


# --- worked examples


def test_no_events_keeps_the_prior() -> None:
    state = effective_confidence(0.85, [], NOW)
    assert state == FeedbackState(effective=0.85, prior=0.85)


def test_one_helpful_today() -> None:
    # alpha = 2 + 1 = 3, beta = 2 -> 3 / 5 = 0.6
    state = effective_confidence(0.5, [ev("e1", "helpful")], NOW)
    assert state.effective == pytest.approx(0.6)
    assert (state.helpful, state.harmful, state.applied) == (1, 0, ("e1",))


def test_one_harmful_today() -> None:
    # alpha = 2, beta = 2 + 2.5 = 4.5 -> 2 / 6.5 = 0.307692
    state = effective_confidence(0.5, [ev("e1", "harmful")], NOW)
    assert state.effective == pytest.approx(0.307692)
    assert state.harmful == 1


def test_old_harmful_counts_half_after_180_days() -> None:
    # helpful today: alpha = 3; harmful 180 d ago: beta = 2 + 2.5 * 0.5 = 3.25 -> 3 / 6.25 = 0.48
    state = effective_confidence(0.5, [ev("e1", "helpful"), ev("e2", "harmful", days=180)], NOW)
    assert state.effective == pytest.approx(0.48)


def test_strong_prior_resists_one_complaint() -> None:
    # prior 0.85: alpha = 3.4, beta = 0.6; one harmful: beta = 3.1 -> 3.4 / 6.5 = 0.523077
    state = effective_confidence(0.85, [ev("e1", "harmful")], NOW)
    assert state.effective == pytest.approx(0.523077)


def test_harmful_weighs_two_and_a_half_helpful() -> None:
    # one of each: alpha = 3, beta = 4.5 -> 3 / 7.5 = 0.4
    assert effective_confidence(
        0.5, [ev("a", "helpful"), ev("b", "harmful")], NOW
    ).effective == pytest.approx(0.4)
    # 5 helpful against 2 harmful balance exactly: alpha = 2 + 5 = 7, beta = 2 + 2 * 2.5 = 7 -> 0.5
    events = [ev(f"h{i}", "helpful", days=i) for i in range(5)] + [
        ev("x1", "harmful", days=1),
        ev("x2", "harmful"),
    ]
    events = [dict(e, at=format_time(NOW)) for e in events]  # all today: no decay
    assert effective_confidence(0.5, events, NOW).effective == pytest.approx(0.5)


def test_contradiction_and_inaccurate_weigh_like_harmful() -> None:
    for signal in ("contradiction", "inaccurate"):
        state = effective_confidence(0.5, [ev("e1", signal)], NOW)
        assert state.effective == pytest.approx(2 / 6.5)
        assert state.harmful == 1


@pytest.mark.parametrize("signal", ["stale", "outdated"])
def test_stale_is_weak_negative_evidence_and_reported(signal: str) -> None:
    # alpha = 2, beta = 2 + 1 = 3 -> 2 / 5 = 0.4
    state = effective_confidence(0.5, [ev("e1", signal)], NOW)
    assert state.effective == pytest.approx(0.4)
    assert (state.stale, state.harmful) == (1, 0)
    assert any("stale" in note for note in state.notes)


def test_confirmation_a_year_old_and_last_confirmed() -> None:
    # 360 days = two event half-lives: weight 0.25 -> alpha = 2.25, beta = 2 -> 2.25 / 4.25 = 0.529412
    state = effective_confidence(0.5, [ev("c1", "confirmation", days=360)], NOW)
    assert state.effective == pytest.approx(0.529412)
    assert state.last_confirmed == NOW - timedelta(days=360)
    assert state.to_dict()["last_confirmed"] == "2025-12-07T12:00:00Z"


def test_effective_stays_within_bounds() -> None:
    assert effective_confidence(1.0, [ev("a", "harmful")], NOW).effective == pytest.approx(4 / 6.5)
    assert effective_confidence(0.0, [ev("a", "helpful")], NOW).effective == pytest.approx(0.2)
    many = [ev(f"e{i}", "helpful", days=i * 3) for i in range(200)]
    assert 0.0 <= effective_confidence(0.0, many, NOW).effective <= 1.0


def test_prior_outside_range_is_rejected() -> None:
    for prior in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="prior"):
            effective_confidence(prior, [], NOW)


# --- burst rule


def test_burst_from_one_source_holds_back_all_but_the_first() -> None:
    # 5 harmful in 40 minutes from one agent: only the first applies -> 2 / 6.5 = 0.307692
    events = [ev(f"b{i}", "harmful", minutes=40 - i * 10, source="agent:loop") for i in range(5)]
    state = effective_confidence(0.5, events, NOW)
    assert state.applied == ("b0",)
    assert state.held_back == ("b1", "b2", "b3", "b4")
    assert state.harmful == 1
    assert state.effective == pytest.approx(0.307692, abs=1e-4)  # minutes of decay are negligible
    assert any("burst" in note and "agent:loop" in note for note in state.notes)


def test_three_in_an_hour_is_not_a_burst() -> None:
    # beta = 2 + 3 * 2.5 = 9.5 -> 2 / 11.5 = 0.173913
    events = [ev(f"b{i}", "harmful", minutes=i * 20, source="agent:x") for i in range(3)]
    state = effective_confidence(0.5, events, NOW)
    assert state.held_back == ()
    assert state.effective == pytest.approx(0.173913, abs=1e-4)


def test_burst_window_is_one_hour_inclusive() -> None:
    inside = [ev(f"b{i}", "harmful", minutes=60 - i * 20, source="agent:x") for i in range(4)]  # 0..60 min
    assert effective_confidence(0.5, inside, NOW).held_back == ("b1", "b2", "b3")
    outside = [ev(f"b{i}", "harmful", minutes=m, source="agent:x") for i, m in enumerate([61, 40, 20, 0])]
    assert effective_confidence(0.5, outside, NOW).held_back == ()


def test_burst_is_per_source_and_ignores_positive_events() -> None:
    events = [ev(f"a{i}", "harmful", minutes=i, source="agent:a") for i in range(3)]
    events += [ev(f"b{i}", "harmful", minutes=i, source="agent:b") for i in range(3)]
    events += [ev(f"h{i}", "helpful", minutes=i, source="agent:a") for i in range(5)]
    state = effective_confidence(0.5, events, NOW)
    assert state.held_back == ()
    assert (state.harmful, state.helpful) == (6, 5)


def test_sliding_window_catches_a_burst_that_straddles_the_hour() -> None:
    # at 0, 50, 55, 65, 70 minutes: 50..70 is four events within an hour; 0 stands alone.
    minutes = [0, 50, 55, 65, 70]
    events = [ev(f"e{m:02d}", "inaccurate", minutes=70 - m, source="agent:x") for m in minutes]
    state = effective_confidence(0.5, events, NOW)
    assert state.applied == ("e00", "e50")
    assert state.held_back == ("e55", "e65", "e70")


def test_stale_signals_count_toward_a_burst() -> None:
    events = [ev(f"s{i}", "stale", minutes=i, source="agent:x") for i in range(4)]
    assert len(effective_confidence(0.5, events, NOW).held_back) == 3


# --- determinism


def test_order_of_events_does_not_matter() -> None:
    events = [
        ev(f"e{i:02d}", SIGNALS[i % len(SIGNALS)], days=i * 7, source=f"agent:{i % 3}") for i in range(30)
    ]
    events += [ev(f"z{i}", "harmful", minutes=i, source="agent:z") for i in range(6)]
    expected = effective_confidence(0.6, events, NOW)
    for seed in range(5):
        shuffled = events[:]
        random.Random(seed).shuffle(shuffled)
        assert effective_confidence(0.6, shuffled, NOW) == expected


def test_ties_break_by_id() -> None:
    events = [ev(i, "harmful", source="agent:x") for i in ("d", "b", "a", "c")]
    state = effective_confidence(0.5, events, NOW)
    assert state.applied == ("a",)
    assert state.held_back == ("b", "c", "d")


def test_duplicates_future_and_malformed_events() -> None:
    events = [
        ev("e1", "helpful"),
        ev("e1", "helpful"),  # a union merge repeated it
        ev("f1", "harmful", days=-1),  # after now: not yet happened
        {"id": "x1", "signal": "loved", "at": format_time(NOW)},
        {"id": "x2", "signal": "helpful", "at": "yesterday"},
        {"signal": "helpful", "at": format_time(NOW)},
        {"id": "x3", "signal": "harmful", "at": "0001-01-01T00:00:00+14:00"},  # before year 1 in UTC
        {"id": "x4", "signal": "harmful", "at": "9999-12-31T23:59:59-14:00"},  # after year 9999 in UTC
    ]
    state = effective_confidence(0.5, events, NOW)
    assert state.applied == ("e1",)
    assert state.effective == pytest.approx(0.6)
    assert len(state.notes) == 7


# --- freshness


@pytest.mark.parametrize(
    ("level", "kind", "days"),
    [
        ("working", "fact", 1),
        ("episodic", "fact", 30),
        ("episodic", "failure", 90),
        ("semantic", "fact", 180),
        ("procedural", "rule", 365),
    ],
)
def test_freshness_is_one_half_at_one_half_life(level: str, kind: str, days: int) -> None:
    created = NOW - timedelta(days=days)
    assert freshness(level, kind, created, NOW) == 0.5
    assert freshness(level, kind, NOW - timedelta(days=2 * days), NOW) == 0.25
    assert freshness(level, kind, NOW, NOW) == 1.0


def test_half_lives_table() -> None:
    assert HALF_LIVES == {
        "working": 1.0,
        "episodic": 30.0,
        "episodic_failure": 90.0,
        "semantic": 180.0,
        "procedural": 365.0,
    }
    assert half_life_days("episodic", "failure") == 90.0
    assert half_life_days("episodic", "anti-pattern") == 30.0  # only kind "failure" gets the longer life
    assert half_life_days("semantic", "failure") == 180.0


def test_freshness_counts_from_last_confirmation() -> None:
    created = NOW - timedelta(days=400)
    confirmed = NOW - timedelta(days=90)
    # semantic: 0.5 ** (90 / 180) = 0.707107
    assert freshness("semantic", "fact", created, NOW, confirmed) == pytest.approx(0.707107, abs=1e-6)
    # a confirmation older than creation changes nothing
    assert freshness("semantic", "fact", NOW - timedelta(days=180), NOW, created) == 0.5


def test_freshness_future_and_naive_times() -> None:
    assert freshness("working", "fact", NOW + timedelta(days=3), NOW) == 1.0
    naive = datetime(2026, 12, 1, 12, 0, 0)  # taken as UTC
    assert freshness("working", "fact", naive, NOW) == 0.5


def test_unknown_level_is_rejected_with_the_allowed_list() -> None:
    with pytest.raises(ValueError, match="working, episodic, semantic, procedural"):
        freshness("eternal", "fact", NOW, NOW)
    with pytest.raises(ValueError):
        half_life_days("episodic_failure", "failure")


# --- events


def test_validate_signal() -> None:
    for signal in SIGNALS:
        assert validate_signal(signal) == signal
    with pytest.raises(ValueError, match="helpful, harmful") as info:
        validate_signal("great")
    assert isinstance(info.value, UsageError)


def test_new_event_is_json_shaped() -> None:
    event = new_event(
        event_id="evt_1",
        memory="mem_1",
        signal="harmful",
        at=NOW,
        source="agent:codex",
        reason="flag renamed",
    )
    assert event == {
        "id": "evt_1",
        "memory": "mem_1",
        "signal": "harmful",
        "at": "2026-12-02T12:00:00Z",
        "source": "agent:codex",
        "reason": "flag renamed",
    }
    with pytest.raises(ValueError):
        new_event(event_id="e", memory="m", signal="nope", at=NOW, source="human")


def test_time_round_trip() -> None:
    assert format_time(parse_time("2026-12-02T12:00:00Z")) == "2026-12-02T12:00:00Z"
    assert parse_time("2026-12-02T13:00:00+01:00") == NOW
    assert format_time(datetime(2026, 12, 2, 12, 0, 0, 999999, tzinfo=UTC)) == "2026-12-02T12:00:00Z"
