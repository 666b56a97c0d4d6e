"""Errors that point the right way (issue 36, item 5): each message names what went wrong and its repair
names the command or option that fixes it, never one that does not apply."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ee.commands import Command
from ee.errors import ExitCode
from ee.mcp.invoke import call_tool
from ee.mcp.tools import TOOLS
from ee.schemas import validator
from ee.workspace import Workspace
from tests.conftest import Result, doctor_report

Cli = Callable[..., Result]


def error_of(result: Result, code: int) -> dict[str, str]:
    assert result.code == code, (result.out, result.err)
    doc = json.loads(result.out)
    validator("ee.error.v1").validate(doc)
    assert result.err.startswith("error: ")
    return dict(doc["error"])


def test_an_empty_task_names_ee_context_not_ee_search(cli: Cli) -> None:
    for args in ([""], ["  "]):
        error = error_of(cli("context", *args, "--json"), ExitCode.USAGE)
        assert "the task is empty" in error["message"]
        assert "ee context" in error["repair"]
        assert "ee search" not in error["repair"]


def test_as_of_that_is_neither_a_time_nor_a_commit_says_what_works(cli: Cli, ws: Workspace) -> None:
    ws.remember("Run make test before a release.")
    for args in (["search", "release"], ["context", "release"], ["memory", "show", "x"]):
        error = error_of(cli(*args, "--as-of", "last tuesday", "--json"), ExitCode.NOT_FOUND)
        assert "'last tuesday' is neither a time nor a commit" in error["message"]
        assert "RFC 3339" in error["repair"]
        assert "2026-12-01T09:00:00Z" in error["repair"]
        assert "HEAD~3" in error["repair"]


def test_a_duplicate_id_import_does_not_suggest_redact(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    existing = ws.remember("Already here.")
    source = tmp_path / "dup.jsonl"
    source.write_text(json.dumps({"id": existing.id, "body": "clash"}) + "\n", encoding="utf-8")
    error = error_of(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)
    assert "already in the store" in error["message"]
    assert "--redact" not in error["repair"]
    assert "give it another id" in error["repair"]
    assert "--skip-invalid" in error["repair"]
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"body": "token ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2}) + "\n")
    error = error_of(cli("import", "jsonl", str(secret), "--json"), ExitCode.POLICY)
    assert "--redact" in error["repair"]  # where it does apply


def test_one_memory_is_not_memories(cli: Cli, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"body": "A single fact."}) + "\n", encoding="utf-8")
    assert cli("import", "jsonl", str(one), "--human").out.strip() == "imported 1 memory"
    two = tmp_path / "two.jsonl"
    two.write_text("".join(json.dumps({"body": f"Fact {n}."}) + "\n" for n in (1, 2)), encoding="utf-8")
    assert cli("import", "jsonl", str(two), "--human").out.strip() == "imported 2 memories"


def test_doctor_that_fails_never_says_success(cli: Cli, ws: Workspace) -> None:
    healthy = cli("doctor", "--json")
    assert healthy.code == 0
    assert healthy.json["success"] is True
    (ws.root / "memories" / "bad.md").write_text("---\nconfidence: lots\n---\nbody\n", encoding="utf-8")
    error = error_of(cli("doctor", "--json"), ExitCode.STORAGE)
    assert error["code"] == "doctor_found_problems"
    assert "memories/bad.md:2: confidence must be a number" in error["message"]
    assert error["repair"] == doctor_report({"success": False, "error": error})["problems"][0]["repair"]


def test_the_trust_refusal_names_no_option_the_command_lacks(
    cli: Cli, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ws.remember("Agents wrote this.")
    monkeypatch.setenv("EE_AGENT", "codex")
    result = cli("memory", "trust", memory.id, "--class", "human_explicit", "--json")
    error = error_of(result, ExitCode.POLICY)
    assert "--agent" not in error["repair"]
    assert "EE_AGENT" in error["repair"]
    assert "--agent" not in cli("memory", "trust", "--help").out  # (the option it must not suggest)


def _tool(name: str) -> Command:
    return next(tool for tool in TOOLS if tool.name == name)


def test_mcp_search_takes_plain_words_as_the_query(ws: Workspace) -> None:
    ws.remember("The release checklist: tag, build, upload.", kind="rule")
    for name, words in (("search", "release checklist"), ("context", "release checklist")):
        answer = call_tool(_tool(name), {"query": words}, str(ws.root))
        text = "text" if name == "search" else "task"
        plain = call_tool(_tool(name), {text: words}, str(ws.root))
        assert answer.ok, answer.document
        assert answer.document == plain.document
    document = call_tool(
        _tool("search"), {"query": {"version": "ee.query.v1", "query": {"text": "release"}}}, str(ws.root)
    )
    assert document.ok, document.document
    wrong = call_tool(_tool("search"), {"query": 42}, str(ws.root))
    assert not wrong.ok
    assert wrong.document["error"]["message"].startswith("search: query: ")
    assert wrong.document["error"]["repair"].startswith('put the words in text: {"text": "…"}')
