"""Packs mark what the review queue has not settled: a memory whose cited code changed, and both sides of a
contradiction no person decided. Checked just in time, on real files and real git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
from conftest import git, run_cli

from ee.schemas import load_schema
from ee.workspace import Workspace


def context(root: Path, task: str, *extra: str) -> Any:
    result = run_cli("--workspace", str(root), "context", task, "--min-relevance", "0", *extra)
    assert result.code == 0, result.err
    return result


def items(pack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for section in pack["sections"] for item in section["items"]}


def cited(ws: Workspace) -> str:
    code = ws.root / "src" / "retry.py"
    code.parent.mkdir(parents=True)
    code.write_text("MAX_RETRIES = 3\n\n\ndef backoff(n):\n    return 2 ** n\n", encoding="utf-8")
    git(ws.root, "add", "src/retry.py")
    git(ws.root, "commit", "-q", "-m", "retry")
    return ws.remember("The payment client retries a request at most 3 times.", paths=["src/retry.py:1"]).id


def test_remember_records_the_cited_texts_hash(ws: Workspace) -> None:
    memory_id = cited(ws)
    text = (ws.root / ws.get(memory_id).path).read_text()
    assert 'cites: ["src/retry.py:1 ' in text
    scope = ws.remember("Retries are configured in the src folder.", paths=["src/*.py"])
    assert "cites" not in (ws.root / scope.path).read_text()  # a glob is a scope, not a citation


def test_a_pack_marks_a_memory_whose_cited_code_changed(ws: Workspace) -> None:
    memory_id = cited(ws)
    fresh = context(ws.root, "how many times does the payment client retry", "--json").data
    assert "marks" not in items(fresh)[memory_id]
    code = ws.root / "src" / "retry.py"
    code.write_text(code.read_text().replace("MAX_RETRIES = 3", "MAX_RETRIES = 5"))
    git(ws.root, "commit", "-q", "-am", "five retries")
    commit = git(ws.root, "log", "-1", "--format=%h").strip()
    pack = context(ws.root, "how many times does the payment client retry", "--json").data
    assert items(pack)[memory_id]["marks"] == [f"stale: the code it cites changed in {commit} (src/retry.py)"]
    jsonschema.validate(pack, load_schema("ee.pack.v1"))
    markdown = context(ws.root, "how many times does the payment client retry", "--format", "markdown").out
    assert f"⚠ stale: the code it cites changed in {commit}" in markdown
    # The rest of the file may change: only the cited line counts.
    code.write_text(code.read_text() + "\n# a comment\n")
    pack = context(ws.root, "how many times does the payment client retry", "--json").data
    assert "working tree" not in str(items(pack)[memory_id]["marks"])


def test_a_refreshed_citation_is_no_longer_marked(ws: Workspace) -> None:
    memory_id = cited(ws)
    code = ws.root / "src" / "retry.py"
    code.write_text(code.read_text().replace("MAX_RETRIES = 3", "MAX_RETRIES = 5"))
    git(ws.root, "commit", "-q", "-am", "five retries")
    assert run_cli("--workspace", str(ws.root), "curate", "scan", "--json").code == 0
    listed = run_cli("--workspace", str(ws.root), "curate", "list", "--type", "stale-citation", "--json").data
    candidate = listed["candidates"][0]
    accepted = run_cli("--workspace", str(ws.root), "curate", "accept", candidate["id"], "--json")
    assert accepted.code == 0, accepted.err
    pack = context(ws.root, "how many times does the payment client retry", "--json").data
    assert "marks" not in items(pack)[memory_id]


def test_a_pack_marks_both_sides_of_an_undecided_contradiction(ws: Workspace) -> None:
    use = ws.remember("Format the Python code with black before committing.")
    never = ws.remember("Never format the Python code with black before committing.")
    before = context(ws.root, "format python code black", "--json").data
    assert all("marks" not in item for item in items(before).values())  # no scan yet, no link
    assert run_cli("--workspace", str(ws.root), "curate", "scan", "--json").code == 0
    pack = context(ws.root, "format python code black", "--json").data
    shown = items(pack)
    assert {use.id, never.id} <= set(shown)
    assert "contradiction: unresolved" in shown[use.id]["marks"][0]
    assert never.id in shown[use.id]["marks"][0]
    assert use.id in shown[never.id]["marks"][0]
    candidate = shown[use.id]["marks"][0].rsplit("ee curate show ", 1)[1].rstrip(")")
    rejected = run_cli("--workspace", str(ws.root), "curate", "reject", candidate, "--json")
    assert rejected.code == 0
    settled = context(ws.root, "format python code black", "--json").data
    assert all("marks" not in item for item in items(settled).values())


def test_an_explicit_contradicts_link_is_marked_until_decided(ws: Workspace) -> None:
    old = ws.remember("The API is versioned in the URL path.")
    new = ws.remember("API versions are negotiated in a header.", links=[f"contradicts:{old.id}"])
    pack = context(ws.root, "how is the API versioned", "--json").data
    assert any(old.id in mark for mark in items(pack)[new.id]["marks"])
    assert any(new.id in mark for mark in items(pack)[old.id]["marks"])
