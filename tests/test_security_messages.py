"""Issue 31, item 7: ee never copies a secret into a commit message, and ``ee sync`` never pushes one.

Real repositories: a memory file written and committed by hand (``--no-verify``, as a person or a tool
that skips hooks can), then ee's own writes on it, and a bare remote for ``ee sync``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import doctor_report, git, run_cli

from ee.workspace import Workspace

TOKEN = "ghp_" + "R8f2kQ9vLx3mZp7Wt1Yc5Nb0Hs4Jd6Ga2Ue8"


def _hand_memory(ws: Workspace, name: str, first_line: str) -> str:
    """A memory file a person wrote and committed without ee's hooks; its id."""
    memory_id = f"hand-{name}"
    path = ws.root / "memories" / f"{name}.md"
    path.write_text(f"---\nid: {memory_id}\n---\n{first_line}\n\nMore words.\n", encoding="utf-8")
    git(ws.root, "add", "memories")
    git(ws.root, "commit", "-q", "--no-verify", "-m", "a note by hand")
    return memory_id


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "forget"),
        ("memory", "tags", "--add", "ci"),
        ("memory", "expire"),
        ("outcome", "--signal", "helpful"),
    ],
    ids=lambda c: c[1] if c[0] == "memory" else c[0],
)
def test_ee_masks_a_secret_in_the_commit_message_it_writes(ws: Workspace, command: tuple[str, ...]) -> None:
    memory_id = _hand_memory(ws, "deploy", f"Use token {TOKEN} for the deploy job")
    verb, *rest = command
    args = [verb, rest[0], memory_id, *rest[1:]] if verb == "memory" else [verb, memory_id, *rest]
    result = run_cli("--workspace", str(ws.root), *args, "--json")
    assert result.code == 0, result.out + result.err
    message = git(ws.root, "log", "-1", "--format=%B")
    assert message.startswith("ee: "), message
    assert TOKEN not in message
    assert "[REDACTED:github_token]" in message


def test_the_subject_is_masked_before_it_is_cut(ws: Workspace) -> None:
    # a token that straddles the 72-character cut must not leave a recognisable prefix behind either
    words = "Deploy with the production credentials from the vault once a week"
    memory_id = _hand_memory(ws, "cut", f"{words} {TOKEN}")
    assert run_cli("--workspace", str(ws.root), "memory", "forget", memory_id).code == 0
    subject = git(ws.root, "log", "-1", "--format=%s").strip()
    assert len(subject) <= 72
    assert TOKEN[:12] not in subject


def test_a_long_subject_is_cut_at_a_word_and_says_so(ws: Workspace) -> None:
    words = "Decided to deploy the billing service on Fly.io instead of Heroku because the staging costs grew"
    memory_id = _hand_memory(ws, "long", words)
    assert run_cli("--workspace", str(ws.root), "memory", "forget", memory_id).code == 0
    subject = git(ws.root, "log", "-1", "--format=%s").strip()
    assert len(subject) <= 72
    assert subject.endswith("..."), subject
    kept = subject[: -len("...")].split()
    assert kept[-1] in words.split(), subject  # (a whole word, never a word cut short)


@pytest.fixture
def remote_clone(tmp_path: Path) -> tuple[Path, Path]:
    subprocess.run(["git", "config", "--global", "init.defaultBranch", "main"], check=True)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / "a")], check=True, capture_output=True)
    Workspace.init(tmp_path / "a")
    first = run_cli("--workspace", str(tmp_path / "a"), "sync", "--json")
    assert first.code == 0, first.out + first.err
    return tmp_path / "a", bare


def _push_refused(root: Path, bare: Path) -> str:
    before = git(bare, "rev-parse", "main")
    result = run_cli("--workspace", str(root), "sync", "--json")
    assert result.code == 6, result.out + result.err
    assert TOKEN not in result.out + result.err
    assert git(bare, "rev-parse", "main") == before  # nothing was pushed
    error = result.json["error"]
    assert "nothing was pushed" in error["message"]
    assert "rotate" in error["repair"]
    return str(error["message"])


def test_sync_refuses_to_push_a_commit_message_that_holds_a_secret(remote_clone: tuple[Path, Path]) -> None:
    root, bare = remote_clone
    (root / "README.md").write_text("notes\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "--no-verify", "-m", f"wire the deploy\n\ntoken: {TOKEN}")
    message = _push_refused(root, bare)
    assert "message (github_token)" in message
    git(root, "commit", "-q", "--amend", "-m", "wire the deploy")  # the repair the error names
    assert run_cli("--workspace", str(root), "sync", "--json").code == 0
    assert TOKEN not in git(bare, "log", "--format=%B%an%ae%cn%ce", "main")


def test_sync_refuses_to_push_an_author_that_holds_a_secret(remote_clone: tuple[Path, Path]) -> None:
    root, bare = remote_clone
    (root / "notes.txt").write_text("notes\n")
    git(root, "add", "notes.txt")
    subprocess.run(
        ["git", "-c", f"user.name={TOKEN}", "commit", "-q", "--no-verify", "-m", "notes"],
        cwd=root,
        check=True,
        env={**os.environ, "GIT_AUTHOR_NAME": TOKEN},
    )
    assert "author name (github_token)" in _push_refused(root, bare)


# ------------------------------------------------------------------ item 11: a secret in a hand-written id


def test_a_secret_in_a_hand_written_id_is_refused_with_file_and_line(ws: Workspace, tmp_path: Path) -> None:
    path = ws.root / "memories" / "deploy.md"
    path.write_text(f"---\nkind: rule\nid: {TOKEN}\n---\nDeploy the billing service on Tuesdays.\n")
    git(ws.root, "add", "memories")
    git(ws.root, "commit", "-q", "--no-verify", "-m", "a note by hand")
    for args in (
        ("search", "deploy billing tuesdays", "--json"),
        ("context", "deploy the billing service", "--json"),
        ("memory", "list", "--json"),
        ("memory", "list", "--human"),
        ("export", "jsonl", "--output", str(tmp_path / "out.jsonl")),
        ("doctor", "--json"),
    ):
        result = run_cli("--workspace", str(ws.root), *args)
        assert TOKEN not in result.out + result.err, args
    assert TOKEN not in (tmp_path / "out.jsonl").read_text()
    listed = run_cli("--workspace", str(ws.root), "memory", "list", "--json").json
    assert "memories/deploy.md:3: id holds a secret (github_token)" in json.dumps(listed)
    doctor = run_cli("--workspace", str(ws.root), "doctor", "--json")
    assert doctor.code == 4
    (problem,) = doctor_report(doctor.json)["problems"]  # (exit 4: the ee.error.v1 envelope, issue 36)
    assert (problem["code"], problem["path"], problem["line"]) == ("memory_invalid", "memories/deploy.md", 3)
    assert problem["message"] == "id holds a secret (github_token)"
    assert "write another id" in problem["repair"]
