"""The trust table (ee.policy.trust), DESIGN.md §5."""

from __future__ import annotations

import pytest

from ee.errors import ExitCode, UsageError
from ee.policy.trust import TRUST_CLASSES, at_least, initial_confidence, is_human, posture, rank

TABLE = [
    ("human_explicit", 0.85, "authoritative", True),
    ("peer_human_attested", 0.75, "authoritative", True),
    ("agent_validated", 0.65, "authoritative", False),
    ("agent_assertion", 0.50, "advisory", False),
    ("cass_evidence", 0.45, "advisory", False),
    ("legacy_import", 0.30, "legacy_evidence", False),
]


def test_classes_are_ordered_strongest_first() -> None:
    assert tuple(row[0] for row in TABLE) == TRUST_CLASSES


@pytest.mark.parametrize(("cls", "confidence", "pack_posture", "human"), TABLE)
def test_table_row(cls: str, confidence: float, pack_posture: str, human: bool) -> None:
    assert initial_confidence(cls) == confidence
    assert posture(cls) == pack_posture
    assert is_human(cls) is human
    assert rank(cls) == TRUST_CLASSES.index(cls)


def test_initial_confidence_falls_with_rank() -> None:
    confidences = [initial_confidence(cls) for cls in TRUST_CLASSES]
    assert confidences == sorted(confidences, reverse=True)


def test_at_least() -> None:
    assert at_least("human_explicit", "agent_validated")
    assert at_least("agent_validated", "agent_validated")
    assert not at_least("agent_assertion", "agent_validated")
    assert not at_least("legacy_import", "cass_evidence")
    for cls in TRUST_CLASSES:
        assert at_least(cls, "legacy_import")
        assert at_least("human_explicit", cls)


@pytest.mark.parametrize(
    "call", [initial_confidence, posture, rank, is_human, lambda c: at_least("human_explicit", c)]
)
def test_unknown_class_names_the_allowed_list(call: object) -> None:
    with pytest.raises(ValueError, match="human_explicit, peer_human_attested") as info:
        call("trusted_friend")  # type: ignore[operator]
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.details["allowed"] == list(TRUST_CLASSES)


@pytest.mark.parametrize(
    ("claimed", "by_agent", "granted"),
    [
        ("human_explicit", True, "agent_assertion"),
        ("peer_human_attested", True, "agent_assertion"),
        ("agent_validated", True, "agent_assertion"),
        ("agent_assertion", True, "agent_assertion"),
        ("cass_evidence", True, "cass_evidence"),
        ("legacy_import", True, "legacy_import"),
        ("human_explicit", False, "human_explicit"),
        ("agent_validated", False, "agent_validated"),
    ],
)
def test_an_agent_cannot_claim_more_than_agent_assertion(claimed: str, by_agent: bool, granted: str) -> None:
    from ee.policy.trust import capped

    assert capped(claimed, by_agent=by_agent) == granted
