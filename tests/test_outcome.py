"""ee outcome: append-only feedback events in git, effective confidence, the burst rule and decay — worked
examples from ee.policy.feedback checked through the CLI (outcome → why)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ee.policy.feedback import effective_confidence
from ee.query.standing import feedback_cutoff
from ee.store.ids import format_time, utcnow
from tests.conftest import git


def library(prior: float, ws: Any, memory_id: str) -> float:
    """What ee.policy.feedback says for the stored events, folded as every ranking folds them (up to the
    end of today, so an event from this morning has aged a few hours: 0.5999 where the doc's example,
    aged zero, says 0.6)."""
    rel = ws.root / f"memories/.events/{memory_id}.jsonl"
    events = [json.loads(line) for line in rel.read_text(encoding="utf-8").splitlines()]
    day = utcnow().replace(hour=0, minute=0, second=0)
    return round(effective_confidence(prior, events, feedback_cutoff(day)).effective, 4)


def remember(cli: Any, text: str, *args: str) -> str:
    res = cli("remember", text, "--json", *args)
    assert res.code == 0, res.err
    memory_id: str = res.data["id"]
    return memory_id


def outcome(cli: Any, memory_id: str, signal: str, *args: str) -> dict[str, Any]:
    res = cli("outcome", memory_id, "--signal", signal, "--json", *args)
    assert res.code == 0, res.err
    data: dict[str, Any] = res.data
    return data


def why(cli: Any, memory_id: str, *args: str) -> dict[str, Any]:
    res = cli("why", memory_id, "--json", *args)
    assert res.code == 0, res.err
    data: dict[str, Any] = res.data
    return data


def test_helpful_on_an_agent_memory_moves_05_to_06(ws: Any, cli: Any) -> None:
    memory_id = remember(cli, "The staging database resets every night at 02:00 UTC.", "--agent", "codex")
    path = ws.root / ws.get(memory_id).path
    before = path.read_bytes()
    data = outcome(cli, memory_id, "helpful", "--agent", "claude", "--reason", "saved me a debugging session")
    assert data["prior_confidence"] == 0.5
    assert data["effective_confidence"]["before"] == 0.5
    assert data["effective_confidence"]["after"] == library(0.5, ws, memory_id)
    assert data["effective_confidence"]["after"] == pytest.approx(0.6, abs=2e-3)
    assert data["applied"] is True
    assert data["held_back"] is False
    assert data["event"]["source"] == "agent:claude"
    assert data["event"]["reason"] == "saved me a debugging session"
    standing = why(cli, memory_id)["standing"]
    assert standing["effective_confidence"] == library(0.5, ws, memory_id)
    assert standing["prior_confidence"] == 0.5
    assert [e["status"] for e in standing["events"]] == ["applied"]
    assert path.read_bytes() == before  # the frontmatter prior is never rewritten


def test_outcome_commits_only_its_events_file_with_trailers(ws: Any, cli: Any) -> None:
    memory_id = remember(cli, "Use uv sync --frozen in CI.", "--kind", "rule")
    (ws.root / "notes.txt").write_text("user's unrelated work\n", encoding="utf-8")
    git(ws.root, "add", "notes.txt")
    data = outcome(cli, memory_id, "confirmation")
    rel = f"memories/.events/{memory_id}.jsonl"
    assert data["events_file"] == rel
    assert git(ws.root, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    message = git(ws.root, "log", "-1", "--format=%B")
    assert "Ee-Op: outcome" in message
    assert f"Ee-Memory: {memory_id}" in message
    assert "Ee-Actor: human" in message
    assert "A  notes.txt" in git(ws.root, "status", "--short")  # the user's staged work is left alone
    lines = (ws.root / rel).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["signal"] for line in lines] == ["confirmation"]


def test_one_harmful_on_a_human_memory_gives_0523077(ws: Any, cli: Any) -> None:
    memory_id = remember(cli, "Never force-push to main.", "--kind", "rule", "--level", "procedural")
    data = outcome(cli, memory_id, "harmful", "--reason", "main is unprotected during the freeze")
    assert data["prior_confidence"] == 0.85
    assert data["effective_confidence"]["after"] == library(0.85, ws, memory_id)
    assert data["effective_confidence"]["after"] == pytest.approx(0.523077, abs=2e-3)
    assert why(cli, memory_id)["standing"]["effective_confidence"] == library(0.85, ws, memory_id)


def test_a_180_day_old_harmful_weighs_half(ws: Any, cli: Any) -> None:
    memory_id = remember(cli, "The payments API retries idempotently.", "--agent", "codex")
    old = {
        "id": "evt_old",
        "memory": memory_id,
        "signal": "harmful",
        "source": "agent:codex",
        "reason": None,
        "at": format_time(
            feedback_cutoff(utcnow().replace(hour=0, minute=0, second=0)) - timedelta(days=180)
        ),
    }
    rel = f"memories/.events/{memory_id}.jsonl"
    (ws.root / rel).write_text(json.dumps(old) + "\n", encoding="utf-8")
    git(ws.root, "add", rel)
    git(ws.root, "commit", "-q", "-m", "older feedback")
    data = outcome(cli, memory_id, "helpful")
    # alpha = 2 + 1, beta = 2 + 2.5 * 0.5 -> 3 / 6.25 (the module's worked example)
    assert data["effective_confidence"]["after"] == pytest.approx(0.48, abs=2e-3)
    assert why(cli, memory_id)["standing"]["effective_confidence"] == library(0.5, ws, memory_id)


def test_burst_of_harmful_from_one_agent_is_held_back_and_reported(ws: Any, cli: Any) -> None:
    # an agent's memory (an agent may not complain a person's down: issue 31)
    memory_id = remember(
        cli, "Run migrations with alembic upgrade head.", "--kind", "command", "--agent", "w"
    )
    reports = [outcome(cli, memory_id, "harmful", "--agent", "looper") for _ in range(4)]
    assert [r["held_back"] for r in reports] == [False, False, False, True]
    assert "burst rule" in reports[-1]["message"]
    # prior 0.5; only the first event of the burst counts: beta = 2 + 2.5 -> 2 / 6.5
    assert reports[-1]["effective_confidence"]["after"] == pytest.approx(0.307692, abs=2e-3)
    assert reports[-1]["effective_confidence"]["after"] == library(0.5, ws, memory_id)
    assert reports[-1]["feedback"]["held_back"] == 3
    standing = why(cli, memory_id)["standing"]
    assert [e["status"] for e in standing["events"]] == ["applied", "held_back", "held_back", "held_back"]
    assert len(standing["feedback"]["held_back"]) == 3
    assert any("burst rule" in note for note in standing["feedback"]["notes"])
    other = outcome(cli, memory_id, "harmful", "--agent", "reviewer")  # another source is not held back
    assert other["applied"] is True
    human = cli("why", memory_id, "--human").out
    assert "held_back" in human
    assert "3 held back" in human


def test_freshness_decays_by_level_half_life(ws: Any, cli: Any) -> None:
    created = format_time(utcnow() - timedelta(days=180))
    lines = [
        {"body": "The orders service is written in Go.", "level": "semantic", "created": created},
        {
            "body": "Flaky upload test failed on the runner.",
            "level": "episodic",
            "kind": "failure",
            "created": created,
        },
    ]
    (ws.root.parent / "in.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    ids = cli("import", "jsonl", str(ws.root.parent / "in.jsonl"), "--json").data["ids"]
    semantic, failure = (why(cli, i)["standing"] for i in ids)
    assert semantic["half_life_days"] == 180
    assert semantic["freshness"] == pytest.approx(0.5, abs=0.005)  # one half-life (± the day's rounding)
    assert failure["half_life_days"] == 90
    assert failure["freshness"] == pytest.approx(0.25, abs=0.005)


def test_outcome_refuses_what_it_cannot_record(ws: Any, cli: Any) -> None:
    memory_id = remember(cli, "Tokens rotate weekly.")
    head = git(ws.root, "rev-parse", "HEAD")
    missing = cli("outcome", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB", "--signal", "helpful", "--json")
    assert missing.code == 7
    assert "ee memory list" in missing.json["error"]["repair"]
    secret = cli(
        "outcome", memory_id, "--signal", "harmful", "--reason", "token ghp_" + "a1B2c3D4" * 5, "--json"
    )
    assert secret.code == 6
    assert cli("outcome", memory_id, "--signal", "meh").code == 2
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert not (ws.root / f"memories/.events/{memory_id}.jsonl").exists()


def test_effective_confidences_for_memory_list(ws: Any, cli: Any) -> None:
    from ee.ops.feedback import effective_confidences

    agent = remember(cli, "CI uses four runners.", "--agent", "codex")
    human = remember(cli, "Releases happen on Tuesdays.")
    outcome(cli, agent, "helpful")
    memories, _ = ws.list()
    assert effective_confidences(ws, memories) == {agent: library(0.5, ws, agent), human: 0.85}
