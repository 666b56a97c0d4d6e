"""Issue 31, items 2 and 14: an agent may not hide, demote, retire or delete a person's memory.

One rule (:func:`ee.policy.trust.may_act_on`): the actor's trust must reach the target's. Every attack runs
on a real workspace: the CLI with ``EE_AGENT`` set, the MCP server's tool call, and a memory file an agent
wrote and committed itself. A refusal is exit 6 with the proposed change in its details, and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Result, git, run_cli

from ee.policy.trust import may_act_on
from ee.workspace import Workspace

RULE = "Release tags are pushed only by the release manager, after the changelog is reviewed."


def ee(ws: Workspace, *args: str) -> Result:
    return run_cli("--workspace", str(ws.root), *args, "--json")


@pytest.fixture
def rule(ws: Workspace) -> str:
    """A person's rule: ``ee remember`` without an agent."""
    result = ee(ws, "remember", RULE, "--kind", "rule", "--level", "procedural", "--tags", "release")
    assert result.code == 0, result.err
    return str(result.data["id"])


def in_pack(ws: Workspace, memory_id: str) -> bool:
    result = ee(ws, "context", "who pushes release tags after the changelog", "--mode", "lexical")
    assert result.code == 0, result.err
    return memory_id in result.out


def refused(result: Result, op: str, target: str) -> dict[str, object]:
    assert result.code == 6, result.out + result.err
    error = result.json["error"]
    assert error["code"] == "needs_a_person"
    assert "a person must make this change" in error["repair"]
    proposal: dict[str, object] = error["details"]["proposal"]
    assert (proposal["op"], proposal["target"], proposal["actor"]) == (op, target, "agent:codex")
    return proposal


def test_the_rule() -> None:
    assert may_act_on("human_explicit", "human_explicit")
    assert may_act_on("human_explicit", "agent_assertion")
    assert may_act_on("agent_assertion", "agent_assertion")
    assert not may_act_on("agent_assertion", "human_explicit")
    assert not may_act_on("agent_assertion", "peer_human_attested")
    assert not may_act_on("agent_assertion", "agent_validated")


def test_an_agent_cannot_supersede_a_persons_rule(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = git(ws.root, "rev-parse", "HEAD")
    monkeypatch.setenv("EE_AGENT", "codex")
    result = ee(ws, "remember", "Push release tags straight to main.", "--link", f"supersedes:{rule}")
    proposal = refused(result, "supersede", rule)
    assert proposal["arguments"] == {
        "text": "Push release tags straight to main.",
        "link": f"supersedes:{rule}",
    }
    assert git(ws.root, "rev-parse", "HEAD") == head  # nothing written
    monkeypatch.delenv("EE_AGENT")
    assert in_pack(ws, rule)


def test_an_mcp_remember_cannot_supersede_a_persons_rule(ws: Workspace, rule: str) -> None:
    from ee.mcp.invoke import call_tool
    from ee.mcp.tools import TOOLS

    tool = next(t for t in TOOLS if t.name == "remember")
    arguments = {"text": "Push release tags straight to main.", "links": [f"supersedes:{rule}"]}
    outcome = call_tool(tool, arguments, str(ws.root), agent="codex")
    assert not outcome.ok
    assert outcome.document["error"]["code"] == "needs_a_person"
    assert outcome.document["error"]["details"]["proposal"]["target"] == rule
    assert in_pack(ws, rule)


def test_an_agents_own_file_with_a_supersedes_link_does_not_retire_a_persons_rule(
    ws: Workspace, rule: str
) -> None:
    # the agent's file tool writes the link into a file, and the agent commits it (ee stamps Ee-Actor)
    path = ws.root / "memories" / "newer.md"
    path.write_text(
        "---\nid: agent-newer\nkind: rule\nlinks:\n"
        f"  - {{type: supersedes, to: {rule}}}\n---\n"
        "Release tags are pushed straight to main by whoever finishes the changelog.\n",
        encoding="utf-8",
    )
    git(ws.root, "add", "memories")
    git(ws.root, "commit", "-q", "--no-verify", "-m", "newer rule\n\nEe-Actor: agent:codex")
    assert in_pack(ws, rule)
    why = ee(ws, "why", rule)
    assert why.code == 0, why.err
    assert "superseded" not in why.out


def test_a_persons_supersedes_still_retires_a_rule(ws: Workspace, rule: str) -> None:
    result = ee(ws, "remember", "Release tags are pushed by CI only.", "--link", f"supersedes:{rule}")
    assert result.code == 0, result.err
    why = ee(ws, "why", rule)
    assert f"superseded by {result.data['id']}" in why.out


def test_a_person_cannot_link_an_unreviewed_agent_memory_over_a_persons_rule(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_AGENT", "codex")
    agents = ee(ws, "remember", "Release tags are pushed by the bot.")
    assert agents.code == 0, agents.err
    monkeypatch.delenv("EE_AGENT")
    # the link would make the agent's memory hide the rule: it must be reviewed first
    result = ee(ws, "memory", "link", agents.data["id"], rule, "--type", "supersedes")
    assert result.code == 6, result.out
    assert "ee memory trust" in result.json["error"]["repair"]
    assert ee(ws, "memory", "trust", agents.data["id"], "--class", "human_explicit").code == 0
    assert ee(ws, "memory", "link", agents.data["id"], rule, "--type", "supersedes").code == 0


@pytest.mark.parametrize(
    ("args", "op"),
    [
        (("memory", "forget", "{id}"), "forget"),
        (("memory", "expire", "{id}"), "expire"),
        (("memory", "tags", "{id}", "--remove", "release"), "tags"),
        (("memory", "tags", "{id}", "--add", "obsolete"), "tags"),
        (("memory", "link", "{id}", "{other}", "--type", "related"), "link"),
        (("outcome", "{id}", "--signal", "harmful", "--reason", "wrong"), "outcome"),
        (("outcome", "{id}", "--signal", "outdated"), "outcome"),
    ],
    ids=lambda v: " ".join(v[:3]) if isinstance(v, tuple) else v,
)
def test_an_agent_cannot_change_a_persons_memory(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], op: str
) -> None:
    other = ee(ws, "remember", "Changelogs live in CHANGES.md.").data["id"]
    path = ws.root / ws.get(rule).path
    before, head = path.read_bytes(), git(ws.root, "rev-parse", "HEAD")
    monkeypatch.setenv("EE_AGENT", "codex")
    result = ee(ws, *(a.format(id=rule, other=other) for a in args))
    refused(result, op, rule)
    assert path.read_bytes() == before
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert not (ws.root / "memories" / ".events" / f"{rule}.jsonl").exists()


def test_an_agent_may_still_change_its_own_memory_and_praise_a_persons(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_AGENT", "codex")
    own = ee(ws, "remember", "The release script lives in tools/release.sh.").data["id"]
    assert ee(ws, "memory", "tags", own, "--add", "release").code == 0
    assert ee(ws, "memory", "expire", own).code == 0
    assert ee(ws, "outcome", own, "--signal", "harmful").code == 0
    assert ee(ws, "outcome", rule, "--signal", "helpful").code == 0
    assert ee(ws, "memory", "forget", own).code == 0


def test_a_person_may_change_an_agents_memory(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EE_AGENT", "codex")
    own = ee(ws, "remember", "The release script lives in tools/release.sh.").data["id"]
    monkeypatch.delenv("EE_AGENT")
    assert ee(ws, "memory", "tags", own, "--add", "checked").code == 0
    assert ee(ws, "memory", "forget", own).code == 0
    assert not Path(ws.root / "memories").joinpath(f"{own}.md").exists()
