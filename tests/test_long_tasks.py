"""Long tasks (issue 36, item 4): one rule on the command line, in the hook path, in a query document and
over MCP: a text above 8,192 characters is shortened to its most informative part, and ``degraded`` says so
(never a refusal)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ee.mcp.invoke import call_tool
from ee.mcp.tools import TOOLS
from ee.query.document import MAX_QUERY_CHARS, shortened
from ee.workspace import Workspace
from tests.conftest import Result

Cli = Callable[..., Result]

ASK = "Fix the flaky upload test: the release checklist says to retry twice."
QUESTION = "Why does the upload fail only in CI?"


def long_task(chars: int = 9_600) -> str:
    """A pasted wall of text: the ask first, a long log (partly repeated), the question last."""
    log = "".join(f"upload attempt {n} failed: timeout after {n % 7}s on runner-{n % 3}\n" for n in range(99))
    log *= 4
    text = ASK + "\n" + log + log[:2000] + QUESTION
    assert len(text) > chars
    return text[: chars - len(QUESTION)] + QUESTION if len(text) > chars else text


def test_the_rule_keeps_the_beginning_and_the_end_within_the_limit() -> None:
    text = long_task()
    kept, notes = shortened(text)
    assert len(kept) <= MAX_QUERY_CHARS
    assert kept.startswith(ASK)
    assert kept.endswith(QUESTION)
    (note,) = notes
    assert note["code"] == "task_shortened"
    assert note["message"].startswith(f"the text is {len(text):,} characters, more than 8,192: ee kept ")
    unique = ASK + "\n" + "".join(f"line {n}: value {n * n}\n" for n in range(1000)) + QUESTION
    kept, notes = shortened(unique)
    assert len(kept) <= MAX_QUERY_CHARS
    assert (kept.startswith(ASK), kept.endswith(QUESTION)) == (True, True)
    assert " … " in kept
    assert "its beginning and its end" in notes[0]["message"]
    repeated = "\n".join(["the same log line"] * 1000)
    kept, notes = shortened(repeated)
    assert kept == "the same log line"  # repeated lines first: nothing else had to go
    assert "each repeated line once" in notes[0]["message"]
    assert shortened("short task") == ("short task", ())
    word = "x" * 9_600  # no space to cut at: still within the limit
    assert len(shortened(word)[0]) <= MAX_QUERY_CHARS


def _shortened_note(degraded: list[dict[str, str]]) -> dict[str, str]:
    (note,) = [d for d in degraded if d["code"] == "task_shortened"]
    return note


def test_context_on_the_command_line_and_in_the_hook_path_follow_one_rule(cli: Cli, ws: Workspace) -> None:
    ws.remember("The upload test is flaky in CI: retry it twice before calling it broken.", kind="failure")
    task = long_task()
    typed = cli("context", task, "--json")
    assert typed.code == 0, typed.err  # not refused
    note = _shortened_note(typed.json["degraded"])
    assert len(typed.json["data"]["task"]) <= MAX_QUERY_CHARS
    assert typed.json["data"]["task"].endswith(QUESTION)
    prompt = json.dumps({"prompt": task, "hook_event_name": "UserPromptSubmit"})
    hooked = cli("context", "-", "--json", input=prompt)
    assert hooked.code == 0, hooked.err
    assert _shortened_note(hooked.json["degraded"]) == note
    assert hooked.json["data"]["task"] == typed.json["data"]["task"]
    injected = cli("context", "-", "--format", "hook", input=prompt)
    assert injected.code == 0, injected.err
    assert "upload test is flaky" in json.loads(injected.out)["hookSpecificOutput"]["additionalContext"]
    human = cli("context", task, "--human")
    assert human.code == 0
    assert "degraded: the text is 9,600 characters, more than 8,192" in human.err


def test_search_a_query_document_and_mcp_follow_the_same_rule(
    cli: Cli, ws: Workspace, tmp_path: Path
) -> None:
    ws.remember("The upload test is flaky in CI.", kind="failure")
    task = long_task()
    searched = cli("search", task, "--json")
    assert searched.code == 0, searched.err
    note = _shortened_note(searched.json["degraded"])
    document = tmp_path / "query.json"
    document.write_text(json.dumps({"version": "ee.query.v1", "query": {"text": task}}), encoding="utf-8")
    from_file = cli("search", "--query-file", str(document), "--json")
    assert from_file.code == 0, from_file.err
    assert _shortened_note(from_file.json["degraded"]) == note
    tool = next(t for t in TOOLS if t.name == "context")
    answer = call_tool(tool, {"task": task}, str(ws.root))
    assert answer.ok, answer.document
    assert _shortened_note(answer.document["degraded"])["message"] == note["message"]


def test_why_with_a_long_query_follows_the_rule(cli: Cli, ws: Workspace) -> None:
    memory = ws.remember("The upload test is flaky in CI.", kind="failure")
    result = cli("why", memory.id, "--query", long_task(), "--json")
    assert result.code == 0, result.err
    assert _shortened_note(result.json["degraded"])["message"].startswith("the text is 9,600 characters")
