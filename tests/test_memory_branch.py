"""Where memories live: on the code branch (the default, and its note), or on a memory branch
(``ee init --branch``: ``memories/`` a worktree of its own branch) — with real clones of a bare remote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli
from test_sync import conflicting_edits, ee, export, no_markers_anywhere, remember, sync

from ee.workspace import Workspace

BRANCH = "ee/memories"


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    return bare


def clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True, capture_output=True)
    return dest


@pytest.fixture
def clones(remote: Path, tmp_path: Path) -> list[Path]:
    """Three clones of a code repository whose memories live on the branch ee/memories."""
    first = clone(remote, tmp_path / "a")
    (first / "app.py").write_text("print('hello')\n")
    git(first, "add", "app.py")
    git(first, "commit", "-q", "-m", "code")
    result = run_cli("init", str(first), "--branch", BRANCH, "--json")
    assert result.code == 0, result.err
    assert result.data["branch"] == BRANCH
    git(first, "push", "-q", "origin", "main")
    assert ee(first, "sync").code == 0  # shares the memory branch
    out = [first]
    for name in "bc":
        root = clone(remote, tmp_path / name)
        fresh = run_cli("init", str(root), "--json")  # the config says where memories live
        assert fresh.code == 0, fresh.err
        assert f"{BRANCH} (from origin/{BRANCH})" in " ".join(fresh.data["created"])
        out.append(root)
    return out


def test_init_branch_keeps_memories_apart_from_the_code_branch(clones: list[Path], remote: Path) -> None:
    a, b, _ = clones
    assert (a / "memories" / ".git").is_file()  # a worktree
    assert git(a / "memories", "rev-parse", "--abbrev-ref", "HEAD").strip() == BRANCH
    assert "/memories/" in (a / ".gitignore").read_text().splitlines()
    memory_id = remember(a, "Run the linters before pushing")
    assert git(a, "status", "--porcelain").strip() == ""  # the code branch sees nothing
    assert git(a, "ls-tree", "-r", "--name-only", "main").split() == [
        ".ee/config.toml",
        ".gitignore",
        "app.py",
    ]
    files = git(a / "memories", "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert Workspace(a).get(memory_id).path in [f"memories/{f}" for f in files]
    sync(a)
    assert sync(b)["incoming"]["added"] == [memory_id]
    assert git(remote, "rev-parse", "main") == git(a, "rev-parse", "main")  # sync leaves code alone
    again = run_cli("init", str(a), "--human")
    assert "already initialised" in again.out
    assert ee(a, "doctor").data["problems"] == []  # the layout of this mode is whole


def test_memories_and_feedback_survive_a_code_checkout(clones: list[Path]) -> None:
    a, _, _ = clones
    git(a, "checkout", "-q", "-b", "feature")
    memory_id = remember(a, "The feature flag lives in settings.toml")
    assert ee(a, "remember", "x").data["id"]  # no note: a memory branch is where memories go
    note = ee(a, "remember", "The cache must be warm before the benchmark")
    assert note.json["degraded"] == []
    assert ee(a, "outcome", memory_id, "--signal", "helpful").code == 0
    git(a, "checkout", "-q", "main")
    git(a, "branch", "-q", "-D", "feature")  # the code branch is abandoned; its lesson stays
    shown = ee(a, "why", memory_id)
    assert shown.code == 0, shown.err
    assert [e["signal"] for e in shown.data["standing"]["events"]] == ["helpful"]
    hits = ee(a, "search", "feature flag settings").data["hits"]
    assert hits[0]["id"] == memory_id


def test_as_of_reads_the_memory_branch_history(clones: list[Path]) -> None:
    a, _, _ = clones
    first = remember(a, "Use tabs in the Makefile")
    before = git(a / "memories", "rev-parse", "HEAD")
    remember(a, "Use spaces in Python files")
    now = {h["id"] for h in ee(a, "search", "use", "--mode", "lexical").data["hits"]}
    past = {h["id"] for h in ee(a, "search", "use", "--mode", "lexical", "--as-of", before).data["hits"]}
    assert first in past
    assert len(now) == 2
    assert past == {first}


def test_conflicts_on_the_memory_branch_resolve_by_label(clones: list[Path], remote: Path) -> None:
    a, b, _ = clones
    memory_id = conflicting_edits(
        clones,
        "rebase",
        "Tests run with pytest -x",
        ("Tests run with pytest -x -q", "Tests run with tox"),
    )
    data = sync(b)
    assert [v["side"] for v in data["conflicted"][0]["versions"]] == ["remote", "local"]
    for root in (a, b):
        sync(root)
        no_markers_anywhere(root, remote, BRANCH, ".")
    assert ee(a, "memory", "resolve", memory_id, "--pick", "local").code == 0
    assert Workspace(a).get(memory_id).body == "Tests run with pytest -x -q"
    sync(a)
    sync(b)
    assert Workspace(b).get(memory_id).body == "Tests run with pytest -x -q"
    assert export(a) == export(b)


def test_a_fresh_clone_before_init_is_told_where_memories_are(clones: list[Path], tmp_path: Path) -> None:
    fresh = clone(tmp_path / "remote.git", tmp_path / "d")
    result = ee(fresh, "remember", "lost?")
    assert result.code == 3, result.out
    assert "ee init" in result.json["error"]["repair"]


# ---------------------------------------------------------------------------------------------- default mode


def test_a_write_on_a_feature_branch_says_where_it_went(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    seed = clone(remote, tmp_path / "seed")
    Workspace.init(seed)
    git(seed, "push", "-q", "origin", "main")
    root = clone(remote, tmp_path / "w")  # origin/HEAD names main
    Workspace.init(root)
    assert ee(root, "remember", "on main").json["degraded"] == []
    git(root, "checkout", "-q", "-b", "feature")
    result = ee(root, "remember", "Learned on the feature branch")
    (note,) = result.json["degraded"]
    assert note["code"] == "written_on_branch"
    assert "'feature', not 'main'" in note["message"]
    assert "ee init --branch" in note["repair"]
    human = run_cli("--workspace", str(root), "remember", "again", "--human")
    assert "follow the code branch" in human.err


def test_init_branch_moves_an_existing_stores_memories_to_the_branch(tmp_path: Path) -> None:
    root = tmp_path / "w"
    Workspace.init(root)
    memory_id = remember(root, "Written before the memory branch")
    assert ee(root, "outcome", memory_id, "--signal", "helpful").code == 0
    result = run_cli("init", str(root), "--branch", BRANCH, "--json")
    assert result.code == 0, result.err
    assert "memories/ removed from the code branch (now on ee/memories)" in result.data["created"]
    tracked = git(root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert not [p for p in tracked if p.startswith("memories/")]
    assert Workspace(root).get(memory_id).body == "Written before the memory branch"
    events = git(root / "memories", "ls-tree", "-r", "--name-only", "HEAD").split()
    assert f".events/{memory_id}.jsonl" in events
    assert [e["signal"] for e in ee(root, "why", memory_id).data["standing"]["events"]] == ["helpful"]
    assert git(root, "status", "--porcelain").strip() == ""


def test_hooks_read_the_memory_branch_from_any_code_branch(clones: list[Path]) -> None:
    from test_hooks import ANTI_PATTERN, BIN

    a, _, _ = clones
    (a / "memories" / "mig.md").write_text(ANTI_PATTERN)
    sync(a)  # committed on the memory branch
    assert run_cli("hooks", "install", "--json", cwd=a).code == 0
    git(a, "checkout", "-q", "-b", "feature")
    (a / "db" / "migrations").mkdir(parents=True)
    (a / "db" / "migrations" / "001.sql").write_text("ALTER TABLE t;\n")
    git(a, "add", "db")
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "EE_HOOK_TIMEOUT": "60"}
    proc = subprocess.run(
        ["git", "commit", "-m", "migration"], cwd=a, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr


def test_why_names_the_branch_holding_feedback_it_cannot_see(tmp_path: Path) -> None:
    root = tmp_path / "w"
    Workspace.init(root)
    memory_id = remember(root, "Retry the flaky upload test once")
    main = git(root, "branch", "--show-current").strip()
    git(root, "checkout", "-q", "-b", "feature")
    assert ee(root, "outcome", memory_id, "--signal", "helpful").code == 0
    assert ee(root, "why", memory_id).data["events_elsewhere"] == []
    git(root, "checkout", "-q", main)
    shown = ee(root, "why", memory_id)
    assert shown.data["standing"]["events"] == []  # the event is on feature only
    assert shown.data["events_elsewhere"] == [{"branch": "feature", "events": 1}]
    (note,) = [d for d in shown.json["degraded"] if d["code"] == "events_on_other_branch"]
    assert "feature" in note["message"]
    git(root, "merge", "-q", "feature")
    assert ee(root, "why", memory_id).data["events_elsewhere"] == []
