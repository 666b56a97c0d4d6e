"""``ee curate``: every candidate type proposed, shown, accepted (one commit), rejected (never again, also
in a clone after a sync), snoozed and accepted with an edit, on real git repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import Result, git, run_cli

from ee.curate.decisions import DECISIONS
from ee.curate.model import TYPES, Candidate, EvidenceRef, NewMemory
from ee.curate.queue import propose
from ee.policy.trust import Actor
from ee.schemas import load_schema
from ee.workspace import Workspace


def ee(root: Path, *args: str, input: str | None = None) -> Result:  # noqa: A002
    return run_cli("--workspace", str(root), *args, "--json", input=input)


def ok(root: Path, *args: str) -> Any:
    """The data of a successful answer; an ``ee curate`` one checked against its schema."""
    result = ee(root, *args)
    assert result.code == 0, result.err + result.out
    jsonschema.validate(result.json, load_schema("ee.response.v1"))
    if args[0] == "curate":
        jsonschema.validate(result.data, load_schema("ee.curate.v1"))
    return result.data


def hand_write(ws: Workspace, name: str, body: str, front: str = "") -> str:
    """A memory file a person wrote and committed (ee's own remember refuses duplicates)."""
    path = ws.root / "memories" / f"{name}.md"
    path.write_text(f"---\nid: {name}\n{front}---\n{body}\n", encoding="utf-8")
    git(ws.root, "add", str(path))
    git(ws.root, "commit", "-q", "-m", f"add {name}")
    return name


# ------------------------------------------------------------------------------------ one scenario per type


def _duplicate(ws: Workspace) -> None:
    hand_write(ws, "uv-a", "Use uv, not pip, to install packages.", "created: 2026-01-01T00:00:00Z\n")
    hand_write(ws, "uv-b", "Use uv,  not pip, to install packages", "created: 2026-02-01T00:00:00Z\n")


def _merge(ws: Workspace) -> None:
    hand_write(
        ws,
        "push-a",
        "Run the unit tests with pytest before every push to the main branch of the service repository",
        "created: 2026-01-01T00:00:00Z\n",
    )
    hand_write(
        ws,
        "push-b",
        "Run the unit tests with pytest before every single push to the main branch of the service "
        "repository",
        "created: 2026-02-01T00:00:00Z\n",
    )


def _contradiction(ws: Workspace) -> None:
    hand_write(
        ws, "black-a", "Format Python code with black in this repository.", "created: 2026-01-01T00:00:00Z\n"
    )
    hand_write(
        ws,
        "black-b",
        "Never format Python code with black in this repository.",
        "created: 2026-02-01T00:00:00Z\n",
    )


def _update(ws: Workspace) -> None:
    hand_write(
        ws, "ci-a", "The CI timeout is 30 minutes for the lint job.", "created: 2026-01-01T00:00:00Z\n"
    )
    hand_write(
        ws, "ci-b", "The CI timeout is 45 minutes for the lint job.", "created: 2026-02-01T00:00:00Z\n"
    )


def _stale_path(ws: Workspace) -> None:
    ws.remember("The payment retries live in the billing module.", paths=["src/billing/retry.py"])


def _stale_citation(ws: Workspace) -> None:
    code = ws.root / "src" / "app.py"
    code.parent.mkdir(parents=True)
    code.write_text("def handler():\n    return 1\n\n\ndef other():\n    pass\n", encoding="utf-8")
    git(ws.root, "add", "src/app.py")
    git(ws.root, "commit", "-q", "-m", "code")
    ws.remember("handler() returns 1 for a healthy service.", paths=["src/app.py:1-2"])
    code.write_text("def handler():\n    return 2\n\n\ndef other():\n    pass\n", encoding="utf-8")
    git(ws.root, "commit", "-q", "-am", "handler returns 2")


def _expired(ws: Workspace) -> None:
    ws.remember("The staging database is frozen for the audit.", valid_to="2026-01-01T00:00:00Z")


def _harmful(ws: Workspace) -> None:
    memory = ws.remember("Restart the cache server to fix flaky tests.")
    ws.outcome(memory.id, "harmful", "it did not help")
    ws.outcome(memory.id, "harmful", "made it worse")


def _agent_write(ws: Workspace) -> None:
    config = ws.root / ".ee" / "config.toml"
    text = config.read_text().replace("# agent_max_count = 50", "agent_max_count = 0")
    config.write_text(text, encoding="utf-8")
    ws.remember("The release branch is cut on Thursdays.", actor=Actor("codex"))


def _unused(ws: Workspace) -> None:
    hand_write(
        ws, "billing", "The legacy billing service is deployed by hand.", "created: 2025-01-01T00:00:00Z\n"
    )
    log = ws.root / ".ee" / "curate" / "retrieved.jsonl"  # this clone's packs since early 2025
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text('{"day":"2025-01-02","ids":["another-memory"]}\n')


def _session(ws: Workspace) -> None:
    propose(ws, [session_candidate()])


def _docs(ws: Workspace) -> None:
    (ws.root / "AGENTS.md").write_text(
        "# Agents\n\n- Always run make lint before pushing a branch.\n\nSome prose here.\n", encoding="utf-8"
    )


def session_candidate() -> Candidate:
    return Candidate.make(
        "session",
        ["ev_01", "ev_02"],
        title="Run the tests with -p no:cacheprovider",
        reason="the agent ran it twice and it worked",
        evidence=[
            EvidenceRef("evidence", "ev_01", "pytest -p no:cacheprovider", {"session_id": "s1", "turn": 3})
        ],
        default_action="write",
        actions=["write"],
        new_memory=NewMemory(
            "Run the tests with pytest -p no:cacheprovider.", "command", ("tests",), ("ev_01",)
        ),
        proposed_by="agent:claude",
    )


SCENARIOS: dict[str, Callable[[Workspace], None]] = {
    "duplicate": _duplicate,
    "merge": _merge,
    "contradiction": _contradiction,
    "update": _update,
    "stale-path": _stale_path,
    "stale-citation": _stale_citation,
    "expired": _expired,
    "harmful": _harmful,
    "agent-write": _agent_write,
    "unused": _unused,
    "session": _session,
    "docs": _docs,
}
# What --edit edits: the default action, except where the default deletes the only memory.
EDIT_ACTION = {"expired": "keep"}
NOT_BUILT: set[str] = set()


def test_every_type_has_a_scenario() -> None:
    assert set(SCENARIOS) | NOT_BUILT == set(TYPES)


def queued(ws: Workspace, kind: str) -> dict[str, Any]:
    ok(ws.root, "curate", "scan", *(["--docs"] if kind == "docs" else []))
    listed = ok(ws.root, "curate", "list", "--type", kind)
    assert listed["count"] == 1, listed
    return listed["candidates"][0]


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def trailers(root: Path) -> str:
    return git(root, "log", "-1", "--format=%(trailers)")


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_a_candidate_is_proposed_shown_and_accepted_in_one_commit(ws: Workspace, kind: str) -> None:
    SCENARIOS[kind](ws)
    candidate = queued(ws, kind)
    assert candidate["id"].startswith("cand_")
    assert candidate["actions"][0] == candidate["default_action"]
    shown = ok(ws.root, "curate", "show", candidate["id"])
    assert shown["status"] == "pending"
    assert shown["evidence"], shown
    assert shown["would_change"]["summary"], shown
    before = head(ws.root)
    accepted = ok(ws.root, "curate", "accept", candidate["id"])
    assert accepted["commit"] != before
    assert git(ws.root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    changed = set(git(ws.root, "show", "--name-only", "--format=", "HEAD").split())
    assert DECISIONS in changed
    assert set(accepted["changed"]["files"]) <= changed
    assert len(accepted["changed"]["files"]) == len(shown["would_change"]["files"]) > 0
    assert f"Ee-Candidate: {candidate['id']}" in trailers(ws.root)
    assert "Ee-Op: curate" in trailers(ws.root)
    assert "Ee-Actor: human" in trailers(ws.root)
    assert git(ws.root, "status", "--porcelain", "memories").strip() == ""
    ok(ws.root, "curate", "scan", *(["--docs"] if kind == "docs" else []))
    assert ok(ws.root, "curate", "list", "--type", kind)["count"] == 0
    assert ee(ws.root, "curate", "accept", candidate["id"]).code == 2  # already accepted


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_a_rejected_candidate_never_comes_back(ws: Workspace, kind: str) -> None:
    SCENARIOS[kind](ws)
    candidate = queued(ws, kind)
    before = head(ws.root)
    rejected = ok(ws.root, "curate", "reject", candidate["id"], "--reason", "not worth it")
    assert rejected["decision"]["verdict"] == "reject"
    assert set(git(ws.root, "show", "--name-only", "--format=", "HEAD").split()) == {DECISIONS}
    assert head(ws.root) != before
    for _ in range(2):
        ok(ws.root, "curate", "scan", *(["--docs"] if kind == "docs" else []))
        assert ok(ws.root, "curate", "list", "--type", kind)["count"] == 0
    if kind == "session":  # proposed again by the session learner: skipped
        assert propose(ws, [session_candidate()]) == []
    assert ok(ws.root, "curate", "show", candidate["id"])["status"] == "rejected"


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_a_snoozed_candidate_returns_after_its_time(ws: Workspace, kind: str) -> None:
    SCENARIOS[kind](ws)
    candidate = queued(ws, kind)
    snoozed = ok(ws.root, "curate", "snooze", candidate["id"], "--until", "7d")
    assert snoozed["decision"]["until"] > snoozed["decision"]["at"]
    ok(ws.root, "curate", "scan", *(["--docs"] if kind == "docs" else []))
    assert ok(ws.root, "curate", "list", "--type", kind)["count"] == 0
    # Its time is up: the team's decisions file says so (a snooze that ended, as a clone would read it).
    lines = (ws.root / DECISIONS).read_text().splitlines()
    last = json.loads(lines[-1])
    last["until"] = "2026-01-01T00:00:00Z"
    (ws.root / DECISIONS).write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    assert [c["id"] for c in ok(ws.root, "curate", "list", "--type", kind)["candidates"]] == [candidate["id"]]


EDITOR = """\
import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(text.rstrip("\\n") + "\\nEdited by a person.\\n")
"""


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_a_candidate_is_accepted_with_an_edit(
    ws: Workspace, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SCENARIOS[kind](ws)
    candidate = queued(ws, kind)
    script = tmp_path / "editor.py"
    script.write_text(EDITOR, encoding="utf-8")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    action = EDIT_ACTION.get(kind, candidate["default_action"])
    accepted = ok(ws.root, "curate", "accept", candidate["id"], "--edit", "--action", action)
    assert any("edited" in line for line in accepted["changed"]["summary"]), accepted
    edited = [ws.root / rel for rel in accepted["changed"]["files"] if (ws.root / rel).exists()]
    assert any(path.read_text().endswith("Edited by a person.\n") for path in edited)
    assert git(ws.root, "status", "--porcelain", "memories").strip() == ""
    assert "Ee-Op: curate" in trailers(ws.root)


def test_an_edit_that_breaks_the_file_is_refused_and_nothing_changes(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stale_path(ws)
    candidate = queued(ws, "stale-path")
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\nopen(sys.argv[1], 'w').write('---\\nlevel: [unclosed\\n---\\nbody\\n')\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    before = head(ws.root)
    result = ee(ws.root, "curate", "accept", candidate["id"], "--edit")
    assert result.code == 4, result.out
    assert result.json["error"]["code"] == "memory_invalid"
    assert head(ws.root) == before
    assert git(ws.root, "status", "--porcelain").strip() == ""


# ------------------------------------------------------------------------------------ agents and people


def test_an_agent_may_list_show_and_propose_but_not_decide(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    _update(ws)
    candidate = queued(ws, "update")
    monkeypatch.setenv("EE_AGENT", "codex")
    assert ok(ws.root, "curate", "show", candidate["id"])["status"] == "pending"
    before = head(ws.root)
    for args in (
        ("accept", candidate["id"]),
        ("reject", candidate["id"]),
        ("snooze", candidate["id"], "--until", "1d"),
        ("accept", "--all", "--type", "update"),
    ):
        result = ee(ws.root, "curate", *args)
        assert result.code == 6, result.out
        assert result.json["error"]["code"] == "policy_denied"
    assert head(ws.root) == before
    proposal = {
        "type": "session",
        "subjects": ["ev_9"],
        "title": "Prefer ruff over flake8",
        "reason": "said in the session",
        "new_memory": {
            "body": "Prefer ruff over flake8.",
            "kind": "convention",
            "tags": [],
            "derived_from": ["ev_9"],
        },
    }
    result = ee(ws.root, "curate", "propose", "--candidates", "-", input=json.dumps(proposal))
    assert result.code == 0, result.err
    proposed = result.data
    assert proposed["candidates"][0]["proposed_by"] == "agent:codex"
    monkeypatch.delenv("EE_AGENT")
    listed = ok(ws.root, "curate", "list", "--type", "session")
    assert [c["title"] for c in listed["candidates"]] == ["Prefer ruff over flake8"]


def test_propose_is_idempotent_and_skips_decided_candidates(ws: Workspace) -> None:
    first = propose(ws, [session_candidate()])
    again = propose(ws, [session_candidate()])
    assert first == again
    assert len(first) == 1
    state = json.loads((ws.root / ".ee" / "curate" / "proposals.json").read_text())
    assert len(state["candidates"]) == 1
    ok(ws.root, "curate", "snooze", first[0].id, "--until", "3d")
    assert propose(ws, [session_candidate()]) == []


def test_a_secret_in_a_proposal_is_masked_in_the_queue(ws: Workspace) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    candidate = Candidate.make(
        "session",
        ["ev_secret"],
        title=f"use token {token}",
        reason="seen",
        evidence=[EvidenceRef("evidence", "ev_secret", f"export GITHUB_TOKEN={token}")],
        default_action="write",
        actions=["write"],
        new_memory=NewMemory("Authenticate with the GitHub CLI.", "command", (), ("ev_secret",)),
        proposed_by="agent:claude",
    )
    propose(ws, [candidate])
    stored = (ws.root / ".ee" / "curate" / "proposals.json").read_text()
    assert token not in stored
    assert token not in ee(ws.root, "curate", "list").out


def test_bulk_accept_makes_one_commit_per_candidate(ws: Workspace) -> None:
    _update(ws)
    hand_write(ws, "port-a", "The dev server port is 8000 for the api.", "created: 2026-01-01T00:00:00Z\n")
    hand_write(ws, "port-b", "The dev server port is 9000 for the api.", "created: 2026-02-01T00:00:00Z\n")
    ok(ws.root, "curate", "scan")
    assert ok(ws.root, "curate", "list", "--type", "update")["count"] == 2
    before = head(ws.root)
    done = ok(ws.root, "curate", "accept", "--all", "--type", "update")
    assert done["count"] == 2
    assert git(ws.root, "rev-list", "--count", f"{before}..HEAD").strip() == "2"
    assert ok(ws.root, "curate", "list", "--type", "update")["count"] == 0


def test_show_of_an_unknown_candidate_is_not_found(ws: Workspace) -> None:
    result = ee(ws.root, "curate", "show", "cand_0000000000000000")
    assert result.code == 7
    assert "ee curate list" in result.json["error"]["repair"]


def test_the_human_view_shows_the_queue_at_a_glance(ws: Workspace) -> None:
    _update(ws)
    ok(ws.root, "curate", "scan")
    out = run_cli("--workspace", str(ws.root), "curate", "list", "--human").out
    assert "1 to review: 1 update" in out
    assert "→ expire-older" in out


# ------------------------------------------------------------------------------------ shared decisions


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    return bare


def clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True, capture_output=True)
    Workspace.init(dest)
    return dest


def test_a_rejection_holds_in_a_clone_after_a_sync(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    _update(Workspace(a))
    ok(a, "sync")
    b = clone(remote, tmp_path / "b")
    candidate = queued(Workspace(a), "update")
    ok(a, "curate", "reject", candidate["id"])
    assert queued(Workspace(b), "update")["id"] == candidate["id"]  # b has not heard yet
    # Both clones decide something at once: the decisions file merges (union), nothing conflicts.
    _contradiction(Workspace(b))
    other = queued(Workspace(b), "contradiction")
    ok(b, "curate", "snooze", other["id"], "--until", "2d")
    ok(a, "sync")
    ok(b, "sync")
    ok(a, "sync")
    for root in (a, b):
        ok(root, "curate", "scan")
        assert ok(root, "curate", "list", "--type", "update")["count"] == 0
        assert ok(root, "curate", "list", "--type", "contradiction")["count"] == 0
        lines = (root / DECISIONS).read_text().splitlines()
        assert len(lines) == 2
        assert not any(line.startswith(("<<<<<<<", ">>>>>>>")) for line in lines)
    fresh = clone(remote, tmp_path / "c")
    ok(fresh, "curate", "scan")
    assert ok(fresh, "curate", "list")["count"] == 0


def test_a_hostile_decisions_file_is_reported_not_followed(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    folder = ws.root / "memories" / ".curate"
    folder.mkdir()
    (folder / "decisions.jsonl").symlink_to(outside)
    _update(ws)
    ok(ws.root, "curate", "scan")
    result = ee(ws.root, "curate", "list")
    assert result.code == 0
    assert any("symlink" in d["message"] for d in result.json["degraded"])
    candidate = result.data["candidates"][0]
    refused = ee(ws.root, "curate", "reject", candidate["id"])
    assert refused.code == 4
    assert "symlink" in refused.json["error"]["message"]
    assert outside.read_text() == ""


def test_a_broken_decision_line_is_reported_and_the_rest_still_counts(ws: Workspace) -> None:
    _update(ws)
    candidate = queued(ws, "update")
    ok(ws.root, "curate", "reject", candidate["id"])
    with (ws.root / DECISIONS).open("a") as handle:
        handle.write("{not json\n")
    result = ee(ws.root, "curate", "list")
    assert result.data["count"] == 0
    assert any(f"{DECISIONS}:2" in d["message"] for d in result.json["degraded"])


# ------------------------------------------------------------------------------------ MCP


def test_mcp_lists_shows_and_proposes_like_the_cli_and_refuses_decisions(ws: Workspace) -> None:
    from ee.mcp.invoke import call_tool
    from ee.mcp.tools import TOOLS

    def tool(name: str, arguments: dict[str, Any]) -> Any:
        found = next(tool for tool in TOOLS if tool.name == name)
        return call_tool(found, arguments, str(ws.root), agent="claude")

    _update(ws)
    candidate = queued(ws, "update")
    assert (
        tool("curate_list", {"type": "update"}).document
        == ee(ws.root, "curate", "list", "--type", "update").json
    )
    shown = tool("curate_show", {"candidate_id": candidate["id"]}).document
    expected = ee(ws.root, "curate", "show", candidate["id"]).json
    for doc in (shown, expected):  # (its diff stamps the expiry "now", to the second)
        assert doc["data"].pop("would_change")["files"]
    assert shown == expected
    before = head(ws.root)
    for verb in ("accept", "reject", "snooze"):
        refused = tool(f"curate_{verb}", {"candidate_id": candidate["id"]})
        assert not refused.ok
        assert refused.document["error"]["code"] == "policy_denied"
    assert head(ws.root) == before
    proposal = {
        "type": "session",
        "subjects": ["ev_mcp"],
        "title": "Prefer ruff over flake8",
        "reason": "the person said so in the session",
        "new_memory": {"body": "Prefer ruff over flake8.", "kind": "convention", "derived_from": ["ev_mcp"]},
    }
    proposed = tool("curate_propose", {"candidates": [proposal]})
    assert proposed.ok, proposed.text
    assert proposed.document["data"]["candidates"][0]["proposed_by"] == "agent:claude"
    accepted = ok(ws.root, "curate", "accept", proposed.document["data"]["candidates"][0]["id"])
    body = (ws.root / accepted["changed"]["files"][0]).read_text()
    assert "Prefer ruff over flake8." in body
    assert "source: evidence:ev_mcp" in body
    assert "trust: human_explicit" in body


def test_an_agents_refused_change_to_a_persons_memory_waits_in_the_queue(ws: Workspace) -> None:
    memory = ws.remember("Releases are cut from the main branch on Tuesdays.")
    before = head(ws.root)
    refused = run_cli(
        "--workspace", str(ws.root), "memory", "expire", memory.id, "--agent", "codex", "--json"
    )
    assert refused.code == 6
    error = refused.json["error"]
    assert error["code"] == "needs_a_person"
    candidate_id = error["details"]["candidate"]
    assert f"ee curate show {candidate_id}" in error["repair"]
    assert head(ws.root) == before
    listed = ok(ws.root, "curate", "list", "--type", "agent-write")
    assert [c["id"] for c in listed["candidates"]] == [candidate_id]
    assert listed["candidates"][0]["default_action"] == "expire"
    assert listed["candidates"][0]["proposed_by"] == "agent:codex"
    accepted = ok(ws.root, "curate", "accept", candidate_id)
    assert accepted["decision"]["action"] == "expire"
    assert ws.get(memory.id).valid_to is not None
    assert "Ee-Actor: human" in trailers(ws.root)


def test_attesting_an_agents_memory_is_a_persons_trust_review(ws: Workspace) -> None:
    _agent_write(ws)
    candidate = queued(ws, "agent-write")
    memory_id = candidate["subjects"][0]
    assert ok(ws.root, "memory", "show", memory_id)["trust"] == "agent_assertion"
    ok(ws.root, "curate", "accept", candidate["id"])
    assert "Ee-Op: trust" in trailers(ws.root)
    assert ok(ws.root, "memory", "show", memory_id)["trust"] == "peer_human_attested"


# ------------------------------------------------------------------------------------ docs


def test_docs_rules_and_commands_are_found_with_their_line() -> None:
    from ee.curate.docs import extract

    text = (
        "# Contributing\n"
        "\n"
        "- Always run make lint before pushing a branch.\n"
        "- We like coffee.\n"
        "\n"
        "Never commit generated files\n"
        "under build/. We are a small team.\n"
        "```sh\n"
        "$ make test\n"
        "# a comment\n"
        "```\n"
        "```python\n"
        "print('not a command')\n"
        "```\n"
        "* Use snake_case for function names.\n"
    )
    assert extract(text) == [
        (3, "rule", "Always run make lint before pushing a branch."),
        (6, "rule", "Never commit generated files under build/."),  # wrapped lines: one sentence
        (9, "command", "make test"),
        (15, "convention", "Use snake_case for function names."),
    ]
    heredoc = "```sh\ncat > notes.md <<'EOF'\nkind: decision\nNo deploys on Fridays.\nEOF\nmake lint\n```\n"
    assert extract(heredoc) == [(2, "command", "cat > notes.md <<'EOF'"), (6, "command", "make lint")]


def test_docs_scan_never_follows_a_link_out_of_the_repository(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- Always deploy on Fridays from the secret branch.\n")
    (ws.root / "AGENTS.md").symlink_to(outside)
    ok(ws.root, "curate", "scan", "--docs")
    assert ok(ws.root, "curate", "list", "--type", "docs")["count"] == 0


def test_accepting_a_docs_candidate_writes_a_memory_with_its_source(ws: Workspace) -> None:
    _docs(ws)
    candidate = queued(ws, "docs")
    assert candidate["evidence"][0]["ref"] == "AGENTS.md:3"
    accepted = ok(ws.root, "curate", "accept", candidate["id"])
    text = (ws.root / accepted["changed"]["files"][0]).read_text()
    assert "file://AGENTS.md#L3" in text
    assert "Always run make lint before pushing a branch." in text
    ok(ws.root, "curate", "scan", "--docs")  # now in the store: not proposed again
    assert ok(ws.root, "curate", "list", "--type", "docs")["count"] == 0


def test_a_memory_a_pack_included_is_not_unused(ws: Workspace) -> None:
    _unused(ws)
    assert queued(ws, "unused")["subjects"] == ["billing"]
    result = run_cli(
        "--workspace",
        str(ws.root),
        "context",
        "how is the legacy billing service deployed",
        "--min-relevance",
        "0",
        "--json",
    )
    assert "billing" in result.out
    lines = (ws.root / ".ee" / "curate" / "retrieved.jsonl").read_text().splitlines()
    assert "billing" in json.loads(lines[-1])["ids"]
    ok(ws.root, "curate", "scan")
    assert ok(ws.root, "curate", "list", "--type", "unused")["count"] == 0


def test_nothing_is_unused_before_the_retrieval_log_is_old_enough(ws: Workspace) -> None:
    hand_write(
        ws, "billing", "The legacy billing service is deployed by hand.", "created: 2025-01-01T00:00:00Z\n"
    )
    ok(ws.root, "curate", "scan")  # no log at all: a fresh clone
    assert ok(ws.root, "curate", "list", "--type", "unused")["count"] == 0


def test_unused_is_judged_on_real_dates_and_the_configured_days(ws: Workspace) -> None:
    from datetime import UTC, datetime, timedelta

    today = datetime.now(UTC)

    def day(days_ago: int) -> str:
        return (today - timedelta(days=days_ago)).strftime("%Y-%m-%d")

    old = "created: 2024-06-01T00:00:00Z\n"
    hand_write(ws, "retrieved-long-ago", "The legacy billing service is deployed by hand.", old)
    hand_write(ws, "retrieved-lately", "The search cluster is resized on Mondays.", old)
    hand_write(ws, "never-retrieved", "The fax gateway is restarted after each holiday.", old)
    young = f"created: {day(5)}T00:00:00Z\n"
    hand_write(ws, "written-lately", "The new payments API is behind a feature flag.", young)
    log = ws.root / ".ee" / "curate" / "retrieved.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(
        json.dumps({"day": day(200), "ids": ["retrieved-long-ago"]})
        + "\n"
        + json.dumps({"day": day(10), "ids": ["retrieved-lately"]})
        + "\n"
    )
    config = ws.root / ".ee" / "config.toml"
    config.write_text(config.read_text().replace("# unused_days = 90", "unused_days = 30"), encoding="utf-8")
    ok(ws.root, "curate", "scan")
    unused = ok(ws.root, "curate", "list", "--type", "unused")["candidates"]
    assert sorted(c["subjects"][0] for c in unused) == ["never-retrieved", "retrieved-long-ago"]
    reasons = {c["subjects"][0]: c["reason"] for c in unused}
    assert day(200) in reasons["retrieved-long-ago"]
    assert "more than 30 days" in reasons["never-retrieved"]
    # a window longer than the log: this clone has not watched long enough to judge anything
    config.write_text(config.read_text().replace("unused_days = 30", "unused_days = 365"), encoding="utf-8")
    ok(ws.root, "curate", "scan")
    assert ok(ws.root, "curate", "list", "--type", "unused")["count"] == 0
