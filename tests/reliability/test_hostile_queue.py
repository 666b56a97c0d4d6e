"""A cloned repository's review decisions (``memories/.curate/decisions.jsonl``) are hostile until read:
a line that forges an agent's or a nonsense decision, a time that would hide a candidate for ever, a huge
file, deep nesting: each is reported at ``file:line`` with its repair, and none of them hides a candidate."""

from __future__ import annotations

import json

import pytest
from test_curate import _update, ee, ok, queued

from ee.curate.decisions import DECISIONS, MAX_DECISIONS_BYTES
from ee.workspace import Workspace


def _line(candidate: dict[str, object], **fields: object) -> str:
    record = {
        "id": "dec_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        "candidate": candidate["id"],
        "type": candidate["type"],
        "subjects": candidate["subjects"],
        "verdict": "reject",
        "actor": "human",
        "at": "2026-01-01T00:00:00Z",
    }
    record.update(fields)
    return json.dumps(record)


FORGED = {
    "an agent's decision": {"actor": "agent:claude"},
    "a decision by nobody ee knows": {"actor": "root"},
    "a snooze until a time that is no time": {"verdict": "snooze", "until": "zzzz"},
    "a snooze until year 9999 spelt as text": {"verdict": "snooze", "until": "9999"},
    "a decision at no time": {"at": "~~~"},
    "a verdict ee does not make": {"verdict": "delete"},
    "subjects that are no list": {"subjects": {"path": "../../etc/passwd"}},
}


@pytest.mark.parametrize("what", FORGED)
def test_a_forged_decision_line_is_reported_and_hides_nothing(ws: Workspace, what: str) -> None:
    _update(ws)
    candidate = queued(ws, "update")
    path = ws.root / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_line(candidate, **FORGED[what]) + "\n", encoding="utf-8")
    result = ee(ws.root, "curate", "list")
    assert result.code == 0, result.out
    assert [c["id"] for c in result.data["candidates"]] == [candidate["id"]], what
    assert any(f"{DECISIONS}:1" in d["message"] for d in result.json["degraded"]), what


def test_a_person_s_decision_line_still_counts(ws: Workspace) -> None:
    """(The checks above are not vacuous: the same line, well formed, hides its candidate.)"""
    _update(ws)
    candidate = queued(ws, "update")
    path = ws.root / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_line(candidate) + "\n", encoding="utf-8")
    assert ok(ws.root, "curate", "list")["count"] == 0


@pytest.mark.parametrize(
    "junk",
    [
        "[" * 100_000 + "]" * 100_000,  # deeper than any parser's stack
        '{"a": ' * 50_000 + "1" + "}" * 50_000,
        "\x00\x01\x02 binary",
        "[1, 2, 3]",
        '"a string"',
    ],
)
def test_malformed_decision_lines_are_reported_and_the_rest_still_counts(ws: Workspace, junk: str) -> None:
    _update(ws)
    candidate = queued(ws, "update")
    path = ws.root / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junk + "\n" + _line(candidate) + "\n", encoding="utf-8")
    result = ee(ws.root, "curate", "list")
    assert result.code == 0, result.out
    assert result.data["count"] == 0
    assert any(f"{DECISIONS}:1" in d["message"] for d in result.json["degraded"])


def test_a_huge_decisions_file_is_not_read_and_says_so(ws: Workspace) -> None:
    _update(ws)
    candidate = queued(ws, "update")
    path = ws.root / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    line = _line(candidate) + "\n"
    with path.open("w", encoding="utf-8") as file:
        file.write(line * (MAX_DECISIONS_BYTES // len(line) + 1))
    result = ee(ws.root, "curate", "list")
    assert result.code == 0, result.out
    assert result.data["count"] == 1
    assert any("larger than" in d["message"] and DECISIONS in d["message"] for d in result.json["degraded"])


@pytest.mark.parametrize("ident", ["../../etc/passwd", "cand_/../../x", "cand_\x00", "cand_" + "a" * 5000])
def test_a_candidate_id_with_path_tricks_is_a_clear_error(ws: Workspace, ident: str) -> None:
    for verb in ("show", "accept", "reject"):
        result = ee(ws.root, "curate", verb, ident)
        assert result.code in (2, 7), (verb, result.out)  # usage or not found
        assert result.json["error"]["repair"]
        assert "Traceback" not in result.err
