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


def curate(root: Path, *args: str) -> Any:
    result = run_cli("--workspace", str(root), "curate", *args, "--json")
    assert result.code == 0, result.err + result.out
    return result.data


def test_a_pack_proposes_the_review_of_a_stale_citation_itself(ws: Workspace) -> None:
    memory_id = cited(ws)
    code = ws.root / "src" / "retry.py"
    code.write_text(code.read_text().replace("MAX_RETRIES = 3", "MAX_RETRIES = 5"))
    git(ws.root, "commit", "-q", "-am", "five retries")
    before = git(ws.root, "rev-parse", "HEAD")
    context(ws.root, "how many times does the payment client retry", "--json")
    listed = curate(ws.root, "list", "--type", "stale-citation")  # no scan ran
    assert [c["subjects"][0] for c in listed["candidates"]] == [memory_id]
    proposals = ws.root / ".ee" / "curate" / "proposals.json"
    held = proposals.read_bytes()
    context(ws.root, "how many times does the payment client retry", "--json")
    assert proposals.read_bytes() == held  # idempotent: the same candidate, not written again
    assert git(ws.root, "rev-parse", "HEAD") == before  # a private proposal: the store is untouched
    assert git(ws.root, "status", "--porcelain").strip() == ""
    scanned = curate(ws.root, "scan")
    assert [c["id"] for c in scanned["candidates"] if c["type"] == "stale-citation"] == [
        listed["candidates"][0]["id"]
    ]  # the pack's candidate is the scan's
    curate(ws.root, "reject", listed["candidates"][0]["id"], "--reason", "fine as it is")
    context(ws.root, "how many times does the payment client retry", "--json")
    assert curate(ws.root, "list", "--type", "stale-citation")["count"] == 0  # rejected: never again


def test_accepting_a_review_that_edits_a_memory_records_its_citations(ws: Workspace) -> None:
    memory_id = cited(ws)
    code = ws.root / "src" / "retry.py"
    code.write_text(code.read_text().replace("MAX_RETRIES = 3", "MAX_RETRIES = 5"))
    git(ws.root, "commit", "-q", "-am", "five retries")
    curate(ws.root, "scan")
    candidate = curate(ws.root, "list", "--type", "stale-citation")["candidates"][0]
    shown = curate(ws.root, "show", candidate["id"], "--action", "expire")
    assert any("record the hash" in line for line in shown["would_change"]["summary"])
    curate(ws.root, "accept", candidate["id"], "--action", "expire")
    from ee.curate.citations import cite_hash, recorded

    memory = ws.get(memory_id)
    assert memory.valid_to  # expired, as asked
    assert recorded(memory) == {"src/retry.py:1": cite_hash(ws.root, "src/retry.py:1")}


def test_attesting_an_agents_memory_records_the_hash_of_the_code_it_cites(ws: Workspace) -> None:
    code = ws.root / "src" / "retry.py"
    code.parent.mkdir(parents=True)
    code.write_text("MAX_RETRIES = 3\n", encoding="utf-8")
    git(ws.root, "add", "src/retry.py")
    git(ws.root, "commit", "-q", "-m", "retry")
    path = ws.root / "memories" / "retries.md"
    path.write_text(
        "---\nid: retries\ntrust: agent_assertion\ncreated: 2025-01-01T00:00:00Z\n"
        "paths: [src/retry.py]\n---\n"
        "The payment client retries at most 3 times.\n",
        encoding="utf-8",
    )
    git(ws.root, "add", "memories/retries.md")
    git(ws.root, "commit", "-q", "-m", "an agent's memory", "--trailer", "Ee-Actor: agent:codex")
    curate(ws.root, "scan")
    candidate = curate(ws.root, "list", "--type", "agent-write")["candidates"][0]
    curate(ws.root, "accept", candidate["id"])  # attest
    from ee.curate.citations import cite_hash

    text = path.read_text()
    assert f"src/retry.py {cite_hash(ws.root, 'src/retry.py')}" in text
    assert "trust: peer_human_attested" in text


def test_a_cited_file_swapped_for_a_link_out_of_the_repository_is_not_read(
    ws: Workspace, tmp_path: Path
) -> None:
    from ee.curate.citations import cite_hash

    code = ws.root / "src" / "retry.py"
    code.parent.mkdir(parents=True)
    code.write_text("MAX_RETRIES = 3\n", encoding="utf-8")
    first = cite_hash(ws.root, "src/retry.py")
    assert first is not None
    assert cite_hash(ws.root, "src/retry.py") == first  # remembered while the file is unchanged
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "retry.py").write_text("SECRET = 1\n", encoding="utf-8")
    code.unlink()
    code.parent.rmdir()
    (ws.root / "src").symlink_to(outside)
    assert cite_hash(ws.root, "src/retry.py") is None
    # the same size, written again in place: another modification time, another hash
    (ws.root / "src").unlink()
    code.parent.mkdir()
    code.write_text("MAX_RETRIES = 4\n", encoding="utf-8")
    assert cite_hash(ws.root, "src/retry.py") not in (None, first)
