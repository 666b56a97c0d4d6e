"""Who wrote a memory since a person last reviewed it (ee.index.provenance's ``writer``), over real git
history: agent commits, reviews, renames, a file deleted and written again, and the incremental walk."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ee.index.provenance import provenance
from ee.policy.trust import Actor
from ee.workspace import Workspace

AGENT = Actor("codex")


def _commit(ws: Workspace, message: str) -> None:
    subprocess.run(["git", "add", "-A", "memories"], cwd=ws.root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=ws.root, check=True)


def _writer(ws: Workspace, path: str, old: dict[str, object] | None = None) -> str:
    return str(provenance(ws.git, old or {})["provenance"][path][5])


def test_writer_since_review(tmp_path: Path) -> None:
    ws, _ = Workspace.init(tmp_path / "ws")
    memory = ws.remember("The billing job runs at 02:00 UTC.", actor=AGENT)
    assert _writer(ws, memory.path) == "agent:codex"
    ws.edit_tags(memory.id, add=["reviewed"], actor=Actor())  # a person's tag edit: no review
    assert _writer(ws, memory.path) == "agent:codex"
    ws.review_trust(memory.id, "peer_human_attested", Actor())
    assert _writer(ws, memory.path) == ""
    before = provenance(ws.git, {})
    # an agent's edit after the review (its file tool, committed with ee's Ee-Actor trailer)
    path = ws.root / memory.path
    path.write_text(path.read_text() + "Later words.\n")
    _commit(ws, "an agent's edit\n\nEe-Actor: agent:codex")
    assert _writer(ws, memory.path) == "agent:codex"
    assert _writer(ws, memory.path, before) == "agent:codex"  # incremental walk from the review


def test_a_rename_is_followed_and_a_new_file_starts_afresh(tmp_path: Path) -> None:
    ws, _ = Workspace.init(tmp_path / "ws")
    memory = ws.remember("Deploys go through the release branch.", actor=AGENT)
    before = provenance(ws.git, {})
    moved = Path(memory.path).with_name("moved.md").as_posix()
    subprocess.run(["git", "mv", memory.path, moved], cwd=ws.root, check=True)
    _commit(ws, "rename")
    assert _writer(ws, moved) == "agent:codex"
    assert _writer(ws, moved, before) == "agent:codex"
    # the agent's file deleted, and a person writes a new file under the same name
    (ws.root / moved).unlink()
    _commit(ws, "delete")
    (ws.root / moved).write_text("A person's own note about releases.\n")
    _commit(ws, "a person's file")
    assert _writer(ws, moved) == ""


def test_a_persons_file_has_no_writer(tmp_path: Path) -> None:
    ws, _ = Workspace.init(tmp_path / "ws")
    memory = ws.remember("Use ruff for linting.", actor=Actor())
    assert _writer(ws, memory.path) == ""


def test_an_agents_edit_on_a_branch_merged_after_the_review_is_not_reviewed(tmp_path: Path) -> None:
    """By date the review is newer than the agent's commit, but it never saw it: the merge brings in
    agent-written text nobody reviewed."""
    ws, _ = Workspace.init(tmp_path / "ws")
    memory = ws.remember("Nightly builds publish to the staging bucket.", actor=AGENT)
    git = ["git", "-C", str(ws.root)]
    main = subprocess.run([*git, "branch", "--show-current"], capture_output=True, text=True, check=True)
    subprocess.run([*git, "checkout", "-q", "-b", "agent-work"], check=True)
    ws.edit_tags(memory.id, add=["from-agent"], actor=AGENT)
    subprocess.run([*git, "checkout", "-q", main.stdout.strip()], check=True)
    ws.review_trust(memory.id, "peer_human_attested", Actor())
    assert _writer(ws, memory.path) == ""
    subprocess.run([*git, "merge", "-q", "--no-edit", "agent-work"], check=True)
    assert "from-agent" in (ws.root / memory.path).read_text()
    assert _writer(ws, memory.path) == "agent:codex"
