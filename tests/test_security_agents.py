"""Issue 31, items 2 and 14: an agent may not hide, demote, retire or delete a person's memory.

One rule (:func:`ee.policy.trust.may_act_on`): the actor's trust must reach the target's. Every attack runs
on a real workspace: the CLI with ``EE_AGENT`` set, the MCP server's tool call, and a memory file an agent
wrote and committed itself. A refusal is exit 6 with the proposed change in its details, and changes nothing.
"""

from __future__ import annotations

import json
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
        "kind": "fact",
        "level": "semantic",
        "tags": [],
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
    assert str(outcome.document["error"]["details"]["candidate"]).startswith("cand_")  # it waits for a person
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


# ------------------------------------------------------------------ a refused change waits for a person

OWN = "The release bot pushes the tags once CI is green."
PROPOSED = [
    (
        ("remember", "Push release tags straight to main.", "--kind", "rule", "--link", "supersedes:{id}"),
        "supersede",
    ),
    (("memory", "link", "{own}", "{id}", "--type", "supersedes"), "supersede"),
    (("memory", "tags", "{id}", "--remove", "release"), "tags"),
    (("memory", "tags", "{id}", "--add", "obsolete"), "tags"),
    (("memory", "link", "{id}", "{other}", "--type", "related"), "link"),
    (("outcome", "{id}", "--signal", "harmful", "--reason", "wrong"), "outcome"),
    (("memory", "expire", "{id}", "--at", "2030-01-01T00:00:00Z"), "expire"),
    (("memory", "expire", "{id}"), "expire"),
    (("memory", "forget", "{id}"), "forget"),
]


def head(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", "HEAD").strip()


def setting(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The memories a proposal names: ``other``, a person's; ``own``, the agent's."""
    other = ee(ws, "remember", "Changelogs live in CHANGES.md.").data["id"]
    monkeypatch.setenv("EE_AGENT", "codex")
    own = ee(ws, "remember", OWN).data["id"]
    monkeypatch.delenv("EE_AGENT")
    return {"other": other, "own": own}


def propose_as_agent(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    rule: str,
    names: dict[str, str],
    args: tuple[str, ...],
    op: str,
) -> str:
    """The agent's command, refused: exit 6, nothing changed, the error naming the candidate."""
    path = ws.root / ws.get(rule).path
    before, commit = path.read_bytes(), head(ws)
    monkeypatch.setenv("EE_AGENT", "codex")
    result = ee(ws, *(a.format(id=rule, **names) for a in args))
    monkeypatch.delenv("EE_AGENT")
    refused(result, op, rule)
    assert path.read_bytes() == before
    assert head(ws) == commit
    assert not (ws.root / "memories" / ".events" / f"{rule}.jsonl").exists()
    candidate = str(result.json["error"]["details"]["candidate"])
    assert f"ee curate show {candidate}" in result.json["error"]["repair"]
    return candidate


def check_done(
    ws: Workspace, rule: str, names: dict[str, str], args: tuple[str, ...], data: dict[str, object]
) -> None:
    """What accepting the proposal of ``args`` must have done."""
    memory = ws.get(rule) if args[1] != "forget" else None
    why = ee(ws, "why", rule)
    if args[0] == "remember":
        (new_file,) = [f for f in data["changed"]["files"] if str(f).startswith("memories/")]  # type: ignore[index]
        text = (ws.root / str(new_file)).read_text()
        for part in (
            "Push release tags straight to main.",
            "kind: rule",
            f"to: {rule}",
            "trust: human_explicit",
        ):
            assert part in text
        assert "superseded by" in why.out
    elif args[-1] == "supersedes":
        assert any(link.to == rule for link in ws.get(names["own"]).links)
        assert f"superseded by {names['own']}" in why.out
    elif args[1] == "tags":
        assert memory is not None
        assert set(memory.tags) == ({"release", "obsolete"} if "--add" in args else set())
    elif args[1] == "link":
        assert memory is not None
        assert [(x.type, x.to) for x in memory.links] == [("related", names["other"])]
    elif args[0] == "outcome":
        events = (ws.root / "memories" / ".events" / f"{rule}.jsonl").read_text().splitlines()
        assert len(events) == 1
        event = json.loads(events[0])
        assert (event["signal"], event["source"], event["reason"]) == ("harmful", "agent:codex", "wrong")
    elif args[1] == "expire":
        assert memory is not None
        assert memory.valid_to is not None
        if "--at" in args:
            assert memory.valid_to.startswith("2030-01-01")
    else:
        assert not (ws.root / "memories").joinpath(f"{rule}.md").exists()
        assert ee(ws, "memory", "show", rule).code != 0


@pytest.mark.parametrize(
    ("args", "op"), PROPOSED, ids=lambda v: " ".join(v[:4]) if isinstance(v, tuple) else v
)
def test_a_refused_change_waits_for_a_person_who_accepts_it(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], op: str
) -> None:
    names = setting(ws, monkeypatch)
    candidate = propose_as_agent(ws, monkeypatch, rule, names, args, op)
    # the same change proposed again is the same candidate
    assert propose_as_agent(ws, monkeypatch, rule, names, args, op) == candidate
    listed = ee(ws, "curate", "list", "--type", "agent-write").data
    assert [c["id"] for c in listed["candidates"]] == [candidate]
    entry = listed["candidates"][0]
    assert (entry["default_action"], entry["proposed_by"]) == (op, "agent:codex")
    assert {rule, f"{op}:agent:codex"} <= set(entry["subjects"])
    shown = ee(ws, "curate", "show", candidate).data
    change = shown["would_change"]
    assert change is not None, shown.get("cannot_accept")
    assert change["action"] == op
    assert change["summary"]
    assert change["files"]
    human = run_cli("--workspace", str(ws.root), "curate", "show", candidate, "--human")
    assert human.code == 0
    assert f"accepting ({op}) would:" in human.out
    assert "proposed by agent:codex" in human.out
    # an agent may not accept it
    before = head(ws)
    monkeypatch.setenv("EE_AGENT", "codex")
    assert ee(ws, "curate", "accept", candidate).code == 6
    monkeypatch.delenv("EE_AGENT")
    assert head(ws) == before
    # a person accepts: one commit that makes the change, with ee's trailers
    accepted = ee(ws, "curate", "accept", candidate).data
    assert accepted["decision"]["action"] == op
    assert git(ws.root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    committed = set(git(ws.root, "show", "--name-only", "--format=", "HEAD").split())
    assert committed == {*accepted["changed"]["files"], "memories/.curate/decisions.jsonl"}
    assert accepted["changed"]["files"] == change["files"] or args[0] == "remember"
    footer = git(ws.root, "log", "-1", "--format=%(trailers)")
    for trailer in ("Ee-Op: curate", f"Ee-Candidate: {candidate}", "Ee-Actor: human"):
        assert trailer in footer
    check_done(ws, rule, names, args, accepted)
    assert ee(ws, "curate", "list", "--type", "agent-write").data["count"] == 0


@pytest.mark.parametrize(
    ("args", "op"), PROPOSED, ids=lambda v: " ".join(v[:4]) if isinstance(v, tuple) else v
)
def test_a_rejected_proposal_is_never_proposed_again(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], op: str
) -> None:
    names = setting(ws, monkeypatch)
    candidate = propose_as_agent(ws, monkeypatch, rule, names, args, op)
    assert ee(ws, "curate", "reject", candidate, "--reason", "no").code == 0
    monkeypatch.setenv("EE_AGENT", "codex")
    again = ee(ws, *(a.format(id=rule, **names) for a in args))
    monkeypatch.delenv("EE_AGENT")
    refused(again, op, rule)  # still refused, and not queued again
    assert "candidate" not in again.json["error"]["details"]
    assert ee(ws, "curate", "list", "--type", "agent-write").data["count"] == 0
    assert ws.get(rule).valid_to is None


def test_two_different_proposals_are_two_candidates(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = setting(ws, monkeypatch)
    first = propose_as_agent(ws, monkeypatch, rule, names, ("memory", "tags", "{id}", "--add", "a"), "tags")
    second = propose_as_agent(ws, monkeypatch, rule, names, ("memory", "tags", "{id}", "--add", "b"), "tags")
    assert first != second
    listed = ee(ws, "curate", "list", "--type", "agent-write").data
    assert sorted(c["id"] for c in listed["candidates"]) == sorted([first, second])
    # accepting one does not do the other
    assert ee(ws, "curate", "accept", first).code == 0
    assert "a" in ws.get(rule).tags
    assert "b" not in ws.get(rule).tags


def test_a_proposals_secrets_are_masked(ws: Workspace, rule: str) -> None:
    from ee.curate.queue import find
    from ee.curate.state import propose_refusal
    from ee.policy.trust import Proposal

    token = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
    proposal = Proposal("outcome", rule, "agent:codex", {"signal": "harmful", "reason": f"use {token}"})
    candidate = propose_refusal(ws, ws.get(rule), proposal)
    assert candidate is not None
    stored = (ws.root / ".ee" / "curate" / "proposals.json").read_text()
    assert token not in stored
    assert token not in json.dumps(find(ws, candidate.id).to_dict())


def test_a_persons_refused_link_is_not_queued(
    ws: Workspace, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = setting(ws, monkeypatch)
    result = ee(ws, "memory", "link", names["own"], rule, "--type", "supersedes")
    assert result.code == 6
    assert "candidate" not in result.json["error"]["details"]
