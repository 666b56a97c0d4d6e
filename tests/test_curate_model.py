"""The review queue's data (ee.curate.model): the contract session learning proposes through."""

from __future__ import annotations

import json

import pytest

from ee.curate.model import TYPES, Candidate, EvidenceRef, NewMemory, candidate_id


def test_candidate_id_is_stable_and_order_free() -> None:
    one = candidate_id("duplicate", ["mem_B", "mem_A"])
    assert one == candidate_id("duplicate", ("mem_A", "mem_B", "mem_A"))
    assert one.startswith("cand_")
    assert len(one) == len("cand_") + 16
    # Pinned: the id is shared by clones and stored in decisions, so its recipe must never drift.
    assert one == "cand_" + __import__("hashlib").sha256(b"duplicate\0mem_A\0mem_B").hexdigest()[:16]


def test_candidate_id_depends_on_type_and_every_subject() -> None:
    ids = {candidate_id(kind, ["mem_A", "mem_B"]) for kind in TYPES}
    assert len(ids) == len(TYPES)
    assert candidate_id("merge", ["mem_A"]) != candidate_id("merge", ["mem_A", "mem_B"])
    # No ambiguity from joining: ("ab", "c") and ("a", "bc") differ.
    assert candidate_id("merge", ["ab", "c"]) != candidate_id("merge", ["a", "bc"])


@pytest.mark.parametrize(("kind", "subjects"), [("nonsense", ["mem_A"]), ("merge", [])])
def test_candidate_id_refuses_an_unknown_type_or_no_subject(kind: str, subjects: list[str]) -> None:
    with pytest.raises(ValueError):
        candidate_id(kind, subjects)


def _session_candidate() -> Candidate:
    return Candidate.make(
        "session",
        ["ev_2", "ev_1"],
        title="Run the tests with -p no:cacheprovider",
        reason="the agent stated a working command twice",
        evidence=[
            EvidenceRef("evidence", "ev_1", "use -p no:cacheprovider", {"session_id": "s1", "turn": 3})
        ],
        default_action="write",
        actions=["reject-all", "write", "edit"],
        new_memory=NewMemory("Run pytest with -p no:cacheprovider.", "command", ("tests",), ("ev_1", "ev_2")),
        proposed_by="agent:claude",
        created="2026-12-05T08:00:00Z",
    )


def test_make_sorts_subjects_derives_the_id_and_puts_the_default_first() -> None:
    candidate = _session_candidate()
    assert candidate.subjects == ("ev_1", "ev_2")
    assert candidate.id == candidate_id("session", ["ev_1", "ev_2"])
    assert candidate.actions == ("write", "reject-all", "edit")
    assert candidate.problems() == []


def test_a_candidate_survives_json_round_trip() -> None:
    candidate = _session_candidate()
    again = Candidate.from_dict(json.loads(json.dumps(candidate.to_dict())))
    assert again == Candidate.from_dict(candidate.to_dict())
    assert again.to_dict() == candidate.to_dict()
    assert again.new_memory == candidate.new_memory
    assert again.evidence[0].provenance == {"session_id": "s1", "turn": 3}


def test_problems_name_what_a_foreign_candidate_got_wrong() -> None:
    good = _session_candidate().to_dict()
    forged = Candidate.from_dict({**good, "id": "cand_0000000000000000", "new_memory": None})
    found = forged.problems()
    assert any("candidate_id" in problem for problem in found)
    assert any("needs new_memory" in problem for problem in found)
    assert Candidate.from_dict({**good, "proposed_by": "root"}).problems() == [
        "proposed_by 'root' is not ee, human or agent:<name>"
    ]
    assert Candidate.from_dict({**good, "type": "bogus"}).problems()[0].startswith("type 'bogus'")


def test_candidates_are_frozen() -> None:
    candidate = _session_candidate()
    with pytest.raises(AttributeError):
        candidate.title = "changed"  # type: ignore[misc]
