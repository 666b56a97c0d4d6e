"""The store through the library: init, commits touching only ee's paths, atomic writes, lock, history."""

from __future__ import annotations

import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ee.config import load_config
from ee.errors import (
    ConfigError,
    ConflictError,
    ExitCode,
    GitError,
    LockTimeout,
    NotFound,
    PolicyError,
    SecretFound,
    StorageError,
    UsageError,
    WorkspaceNotFound,
)
from ee.git.repo import parse_trailers
from ee.ops.history import history
from ee.policy.trust import Actor
from ee.store.files import atomic_write, lock_is_held, workspace_lock
from ee.workspace import Workspace, find_root
from tests.conftest import git, make_repo, run_ee_process


def commits(root: Path) -> list[str]:
    return git(root, "log", "--format=%H").split()


def files_in(root: Path, commit: str = "HEAD") -> list[str]:
    return git(root, "show", "--format=", "--name-only", commit).split()


def trailers(root: Path, commit: str = "HEAD") -> dict[str, str]:
    return parse_trailers(git(root, "log", "-1", "--format=%B", commit))


def user_state(root: Path) -> tuple[str, str, str]:
    """What a user sees of their own work: unstaged diff, staged diff, status (ee's paths left out)."""
    status = "\n".join(
        line
        for line in git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
        if "memories/" not in line
    )
    return git(root, "diff"), git(root, "diff", "--cached"), status


# --- init


def test_init_creates_the_layout_in_one_commit(tmp_path: Path) -> None:
    ws, report = Workspace.init(tmp_path / "new")
    root = ws.root
    assert (root / ".git").is_dir()
    assert (root / "memories").is_dir()
    assert (root / ".ee" / "config.toml").is_file()
    assert ".ee/*" in (root / ".gitignore").read_text().splitlines()
    assert "memories/**/*.md merge=ee-memory" in (root / ".gitattributes").read_text()
    assert report.commit == git(root, "rev-parse", "HEAD").strip()
    assert trailers(root) == {"Ee-Op": "init", "Ee-Actor": "human"}
    driver = git(root, "config", "--get", "merge.ee-memory.driver").strip()
    assert driver.endswith("-m ee merge-driver %O %A %B %P")
    assert git(root, "status", "--porcelain") == ""
    assert set(report.created) >= {".git", "memories/", ".ee/config.toml", ".gitignore", ".gitattributes"}


def test_init_is_idempotent(tmp_path: Path) -> None:
    ws, _ = Workspace.init(tmp_path / "w")
    before = commits(ws.root)
    snapshot = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and ".git/" not in str(p)}
    _, again = Workspace.init(tmp_path / "w")
    assert again.commit is None
    assert again.created == ()
    assert commits(ws.root) == before
    after = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert {p: v for p, v in after.items() if p.name != "lock"} == {
        p: v for p, v in snapshot.items() if p.name != "lock"
    }


def test_init_adopts_a_repository_and_keeps_the_users_files(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "app", {"src/main.py": "print(1)\n", ".gitignore": "node_modules\n"})
    first = commits(root)
    Workspace.init(root)
    assert commits(root)[1:] == first
    assert (root / ".gitignore").read_text().startswith("node_modules\n")
    assert set(files_in(root)) == {
        ".gitignore",
        ".gitattributes",
        ".ee/config.toml",
        "memories/.events/.gitkeep",
    }


def test_init_commits_only_its_own_lines_of_a_dirty_gitignore(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "app", {".gitignore": "node_modules\n", ".gitattributes": "*.png binary\n"})
    with (root / ".gitignore").open("a") as handle:
        handle.write("dist\n")  # unstaged
    (root / ".gitattributes").write_text("*.png binary\n*.jpg binary\n")
    git(root, "add", ".gitattributes")  # staged
    (root / ".gitattributes").write_text("*.png binary\n*.jpg binary\n*.gif binary\n")  # and more, unstaged
    Workspace.init(root)
    committed = git(root, "show", "HEAD:.gitignore")
    assert committed.splitlines()[0] == "node_modules"
    assert "dist" not in committed
    assert ".ee/*" in committed.splitlines()
    committed_attrs = git(root, "show", "HEAD:.gitattributes")
    assert "*.jpg binary" not in committed_attrs
    assert "merge=ee-memory" in committed_attrs
    # The user's edits are where they were: unstaged stays unstaged, staged stays staged.
    assert git(root, "diff", "--", ".gitignore").count("\n+dist") == 1
    assert "+*.jpg binary" in git(root, "diff", "--cached", "--", ".gitattributes")
    assert "+*.gif binary" in git(root, "diff", "--", ".gitattributes")
    assert "*.gif binary" not in git(root, "diff", "--cached", "--", ".gitattributes")
    work = (root / ".gitignore").read_text().splitlines()
    assert work[:2] == ["node_modules", "dist"]
    assert ".ee/*" in work


def test_init_in_a_sub_folder_of_a_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mono", {"README.md": "hi\n"})
    ws, _ = Workspace.init(repo / "tools" / "agent")
    memory = ws.remember("Sub-folder workspaces commit paths relative to the top level.")
    assert files_in(repo) == [f"tools/agent/{memory.path}"]
    assert ws.get(memory.id).id == memory.id
    assert [v.op for v in history(ws, memory.id)] == ["remember"]


def test_find_root_walks_up_and_honours_the_environment(
    tmp_path: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = ws.root / "memories" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(cwd=deep) == ws.root
    monkeypatch.setenv("EE_WORKSPACE", str(ws.root))
    assert find_root(cwd=tmp_path) == ws.root
    monkeypatch.setenv("EE_WORKSPACE", str(tmp_path / "missing"))
    with pytest.raises(WorkspaceNotFound) as info:
        find_root()
    assert "ee init" in info.value.hint
    monkeypatch.delenv("EE_WORKSPACE")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkspaceNotFound):
        find_root(cwd=tmp_path / "empty")
    with pytest.raises(WorkspaceNotFound):
        find_root(tmp_path / "empty")


# --- remember


def test_remember_writes_one_file_in_one_commit_with_trailers(ws: Workspace) -> None:
    before = commits(ws.root)
    memory = ws.remember(
        "Run the linter before pushing.\n\nCI fails otherwise.",
        level="procedural",
        kind="rule",
        tags=["ci", "lint", "ci"],
        source=["file://CONTRIBUTING.md"],
        valid_from="2026-01-01",
        valid_to="2027-01-01T00:00:00Z",
        paths=["src/**/*.py"],
    )
    assert commits(ws.root)[1:] == before
    assert files_in(ws.root) == [memory.path]
    assert trailers(ws.root) == {"Ee-Op": "remember", "Ee-Memory": memory.id, "Ee-Actor": "human"}
    assert git(ws.root, "log", "-1", "--format=%s").strip() == "ee: remember Run the linter before pushing."
    assert memory.path.startswith("memories/run-the-linter-before-pushing-ci-")
    assert memory.path.endswith(memory.id[-8:].lower() + ".md")
    assert (memory.tags, memory.trust, memory.confidence) == (("ci", "lint"), "human_explicit", 0.85)
    assert (memory.valid_from, memory.valid_to) == ("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
    assert memory.paths == ("src/**/*.py",)
    assert ws.get(memory.id) == memory
    assert git(ws.root, "status", "--porcelain") == ""


def test_an_agent_writes_agent_assertions(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = ws.remember("Agents are advisory.", actor=Actor("codex"))
    assert (memory.trust, memory.confidence) == ("agent_assertion", 0.5)
    assert trailers(ws.root)["Ee-Actor"] == "agent:codex"
    monkeypatch.setenv("EE_AGENT", "claude")
    memory = ws.remember("From the environment.")
    assert memory.trust == "agent_assertion"
    assert trailers(ws.root)["Ee-Actor"] == "agent:claude"
    with pytest.raises(UsageError):
        Actor.from_env("bad\nname")


def test_remember_refuses_bad_values_and_writes_nothing(ws: Workspace) -> None:
    before = commits(ws.root)
    bad_calls = [
        {"text": "   "},
        {"text": "x", "level": "cosmic"},
        {"text": "x", "kind": "not a kind"},
        {"text": "x", "kind": "hunch"},
        {"text": "x", "confidence": 1.5},
        {"text": "x", "valid_from": "someday"},
        {"text": "x", "valid_from": "2027-01-01", "valid_to": "2026-01-01"},
        {"text": "x", "links": ["supports"]},
        {"text": "x", "links": ["loves:mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"]},
        {"text": "x", "links": ["supports:../../etc"]},
        {"text": "x", "tags": ["a" * 200]},
        {"text": "x", "tags": [f"t{i}" for i in range(300)]},
        {"text": "x\udcff"},
        {"text": "x\x00y"},
    ]
    for call in bad_calls:
        text = call.pop("text")
        with pytest.raises(UsageError) as info:
            ws.remember(text, **call)
        assert info.value.hint, call
    with pytest.raises(SecretFound):
        ws.remember("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    assert commits(ws.root) == before
    assert list((ws.root / "memories").glob("*.md")) == []


def test_remember_redacts_when_asked(ws: Workspace) -> None:
    memory = ws.remember("the token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", redact=True)
    assert "[REDACTED:github_token]" in memory.body
    assert memory.redacted == ("github_token",)
    assert "ghp_" not in (ws.root / memory.path).read_text()


def test_a_failed_commit_leaves_nothing_behind(ws: Workspace) -> None:
    branch = git(ws.root, "symbolic-ref", "--short", "HEAD").strip()
    lock = ws.root / ".git" / "refs" / "heads" / f"{branch}.lock"
    lock.write_text("")  # another git process is updating the branch
    before = commits(ws.root)
    try:
        with pytest.raises(GitError) as info:
            ws.remember("This commit cannot land.")
        assert info.value.hint
    finally:
        lock.unlink()
    assert commits(ws.root) == before
    assert list((ws.root / "memories").glob("*.md")) == []
    assert git(ws.root, "status", "--porcelain") == ""


def test_failed_edits_and_forgets_leave_the_file_as_it_was(ws: Workspace) -> None:
    memory = ws.remember("Stays as it was.", tags=["a"])
    path = ws.root / memory.path
    before = path.read_bytes()
    head = commits(ws.root)
    branch = git(ws.root, "symbolic-ref", "--short", "HEAD").strip()
    lock = ws.root / ".git" / "refs" / "heads" / f"{branch}.lock"
    lock.write_text("")
    try:
        for action in (
            lambda: ws.edit_tags(memory.id, add=["b"]),
            lambda: ws.expire(memory.id),
            lambda: ws.forget(memory.id),
        ):
            with pytest.raises(GitError):
                action()
            assert path.read_bytes() == before
    finally:
        lock.unlink()
    assert commits(ws.root) == head
    assert git(ws.root, "status", "--porcelain") == ""
    assert ws.edit_tags(memory.id, add=["b"]).tags == ("a", "b")


def test_memory_files_get_normal_permissions(ws: Workspace) -> None:
    old = os.umask(0o022)
    try:
        memory = ws.remember("Readable by the team.")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((ws.root / memory.path).stat().st_mode)
    assert mode == 0o644
    (ws.root / memory.path).chmod(0o664)
    git(ws.root, "add", memory.path)
    ws.edit_tags(memory.id, add=["team"])
    assert stat.S_IMODE((ws.root / memory.path).stat().st_mode) == 0o664


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "d" / "f.md"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["f.md"]


# --- the user's work


def _dirty_repo(tmp_path: Path) -> Workspace:
    root = make_repo(
        tmp_path / "proj",
        {"a.txt": "a\n", "b.txt": "b\n", "memories/hand.md": "---\nid: hand-1\n---\nHand written.\n"},
    )
    ws, _ = Workspace.init(root)
    (root / "a.txt").write_text("a changed, not staged\n")
    (root / "b.txt").write_text("b changed and staged\n")
    git(root, "add", "b.txt")
    (root / "c.txt").write_text("new and staged\n")
    git(root, "add", "c.txt")
    (root / "d.txt").write_text("untracked\n")
    (root / "memories" / "draft.md").write_text("A hand-written draft, staged.\n")
    git(root, "add", "memories/draft.md")
    (root / "memories" / "scratch.md").write_text("Untracked scratch memory.\n")
    return ws


def test_ee_commits_never_touch_the_users_staged_or_unstaged_work(tmp_path: Path) -> None:
    ws = _dirty_repo(tmp_path)
    root = ws.root
    before = user_state(root)
    memory_status_before = git(root, "status", "--porcelain", "--", "memories")
    one = ws.remember("First memory.")
    two = ws.remember("Second memory.", tags=["x"])
    ws.edit_tags(one.id, add=["a", "b"], remove=[])
    ws.link(one.id, two.id, "supports")
    ws.expire(two.id, "2030-01-01")
    ws.edit_tags("hand-1", add=["hand"])
    from ee.ops.transfer import import_jsonl

    import_jsonl(ws, ['{"body": "Imported one."}', '{"body": "Imported two.", "tags": ["i"]}'])
    ws.forget(two.id)
    assert user_state(root) == before
    assert git(root, "status", "--porcelain", "--", "memories") == memory_status_before
    for commit in commits(root)[:8]:
        assert all(path.startswith("memories/") for path in files_in(root, commit)), commit
        assert "memories/draft.md" not in files_in(root, commit)
        assert "memories/scratch.md" not in files_in(root, commit)
    assert git(root, "diff", "--cached", "--name-only").split() == ["b.txt", "c.txt", "memories/draft.md"]


def test_an_uncommitted_hand_edit_is_never_rewritten(ws: Workspace) -> None:
    memory = ws.remember("Committed text.")
    path = ws.root / memory.path
    edited = path.read_text().replace("Committed text.", "Edited by hand, not committed.")
    path.write_text(edited)
    head = commits(ws.root)
    for action in (
        lambda: ws.edit_tags(memory.id, add=["x"]),
        lambda: ws.expire(memory.id),
        lambda: ws.forget(memory.id),
    ):
        with pytest.raises(ConflictError) as info:
            action()
        assert "git checkout" in info.value.hint
    assert path.read_text() == edited
    assert commits(ws.root) == head


def test_a_staged_hand_edit_is_never_rewritten(ws: Workspace) -> None:
    memory = ws.remember("Committed text.")
    path = ws.root / memory.path
    original = path.read_text()
    path.write_text(original.replace("Committed", "Staged"))
    git(ws.root, "add", memory.path)
    path.write_text(original)  # the working tree matches HEAD again; the index does not
    with pytest.raises(ConflictError):
        ws.edit_tags(memory.id, add=["x"])
    assert "Staged text." in git(ws.root, "show", f":{memory.path}")


def test_hand_written_file_without_frontmatter_gets_tags_and_keeps_its_text(ws: Workspace) -> None:
    path = ws.root / "memories" / "notes" / "deploy.md"
    path.parent.mkdir()
    path.write_bytes(b"# Deploys\r\n\r\nDeploys go out on Tuesdays.\r\n")
    git(ws.root, "add", ".")
    git(ws.root, "commit", "-qm", "hand-written")
    memory = ws.get("notes-deploy")
    assert (memory.title, memory.trust) == ("Deploys", None)
    updated = ws.edit_tags("notes-deploy", add=["ops", "release"])
    assert updated.tags == ("ops", "release")
    assert (
        path.read_bytes()
        == b"---\r\ntags: [ops, release]\r\n---\r\n# Deploys\r\n\r\nDeploys go out on Tuesdays.\r\n"
    )
    assert files_in(ws.root) == ["memories/notes/deploy.md"]
    assert ws.get("notes-deploy").id == "notes-deploy"


def test_edits_keep_a_hand_written_file_byte_for_byte(ws: Workspace) -> None:
    text = (
        "---\n"
        "# Reviewed in PR 12\n"
        "id: hand-2\n"
        "kind: 'decision'   # why: see ADR-3\n"
        "\n"
        "tags:\n"
        '  - "build"\n'
        "level: semantic\n"
        "---\n"
        "We build with hatch.\n"
    )
    path = ws.root / "memories" / "hand-2.md"
    path.write_text(text)
    git(ws.root, "add", ".")
    git(ws.root, "commit", "-qm", "hand")
    other = ws.remember("Another memory.")
    ws.edit_tags("hand-2", add=["release"])
    ws.link("hand-2", other.id, "related")
    ws.expire("hand-2", "2030-01-01T00:00:00Z")
    assert path.read_text() == (
        "---\n"
        "# Reviewed in PR 12\n"
        "id: hand-2\n"
        "kind: 'decision'   # why: see ADR-3\n"
        "\n"
        "tags:\n"
        '  - "build"\n'
        "  - release\n"
        "level: semantic\n"
        "links:\n"
        f"  - {{type: related, to: {other.id}}}\n"
        "valid_to: 2030-01-01T00:00:00Z\n"
        "---\n"
        "We build with hatch.\n"
    )
    # Removing what was added gives the original bytes back.
    ws.edit_tags("hand-2", remove=["release"])
    assert path.read_text().startswith(text.split("level:")[0])


def test_edit_with_no_change_makes_no_commit(ws: Workspace) -> None:
    memory = ws.remember("Tagged.", tags=["a"])
    head = commits(ws.root)
    assert ws.edit_tags(memory.id, add=["a"]) == memory
    assert ws.edit_tags(memory.id, remove=["zzz"]) == memory
    assert commits(ws.root) == head


# --- reading


def test_broken_files_never_stop_the_rest_from_loading(ws: Workspace) -> None:
    good = ws.remember("A good memory.")
    folder = ws.root / "memories"
    (folder / "bad-yaml.md").write_text("---\nid: b1\ntags: [a\n---\nbody\n")
    (folder / "bad-level.md").write_text("---\nid: b2\nlevel: cosmic\n---\nbody\n")
    (folder / "bad-bytes.md").write_bytes(b"---\nid: b3\n---\ncaf\xe9\n")
    (folder / "dup-a.md").write_text("---\nid: same-id\n---\nfirst\n")
    (folder / "dup-b.md").write_text("---\nid: same-id\n---\nsecond\n")
    (folder / "escape.md").symlink_to("/etc/hostname")
    (folder / "dangling.md").symlink_to(folder / "nowhere.md")
    (folder / "big.md").write_text("x" * (300 * 1024))
    (folder / "dir.md").mkdir()
    os.mkfifo(folder / "pipe.md")
    snap = ws.store.snapshot()
    assert set(snap.memories) == {good.id, "same-id"}
    assert snap.memories["same-id"].path == "memories/dup-a.md"
    by_path = {p.path: p for p in snap.problems}
    assert by_path["memories/bad-yaml.md"].line == 3
    assert (by_path["memories/bad-level.md"].line, by_path["memories/bad-level.md"].key) == (3, "level")
    assert by_path["memories/bad-bytes.md"].line == 4
    assert by_path["memories/dup-b.md"].code == "duplicate_id"
    assert "outside memories/" in by_path["memories/escape.md"].message
    assert "memories/dangling.md" in by_path
    assert "bytes" in by_path["memories/big.md"].message
    assert "memories/pipe.md" in by_path
    assert all(p.repair for p in snap.problems)
    assert (folder / "escape.md").is_symlink()


def test_find_by_id_and_refuse_path_like_ids(ws: Workspace) -> None:
    memory = ws.remember("Findable.")
    assert ws.get(memory.id).body == "Findable."
    (ws.root / "memories" / "moved").mkdir()
    git(ws.root, "mv", memory.path, "memories/moved/renamed.md")
    git(ws.root, "commit", "-qm", "move")
    assert ws.get(memory.id).path == "memories/moved/renamed.md"
    with pytest.raises(NotFound) as info:
        ws.get("mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB")
    assert info.value.hint
    for bad in ("../etc/passwd", "a/b", "..", "", "x" * 200, "a\nb"):
        with pytest.raises(UsageError):
            ws.get(bad)
    with pytest.raises(UsageError):
        ws.store.safe_path("memories/../../etc/passwd")
    with pytest.raises(UsageError):
        ws.store.safe_path("/etc/passwd")


def test_list_filters(ws: Workspace) -> None:
    a = ws.remember("Alpha.", level="procedural", kind="rule", tags=["ci", "rust"])
    b = ws.remember("Beta.", level="episodic", kind="failure", tags=["ci"])
    c = ws.remember("Gamma.", tags=["docs"])
    assert [m.id for m in ws.list()[0]] == sorted([a.id, b.id, c.id])
    assert [m.id for m in ws.list(level="procedural")[0]] == [a.id]
    assert [m.id for m in ws.list(kind="failure")[0]] == [b.id]
    assert [m.id for m in ws.list(tag=["ci", "rust"])[0]] == [a.id]
    assert len(ws.list(tag=["ci"])[0]) == 2
    assert len(ws.list(limit=1)[0]) == 1


# --- edits and history


def test_link_expire_forget_and_history(ws: Workspace) -> None:
    a = ws.remember("Alpha.", tags=["x"])
    b = ws.remember("Beta.")
    with pytest.raises(NotFound):
        ws.link(a.id, "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB", "supports")
    with pytest.raises(UsageError):
        ws.link(a.id, a.id, "supports")
    with pytest.raises(UsageError):
        ws.link(a.id, b.id, "loves")
    linked = ws.link(a.id, b.id, "supports")
    assert [link.to_dict() for link in linked.links] == [{"type": "supports", "to": b.id}]
    ws.link(a.id, b.id, "supports")  # twice: still one link, no commit
    with pytest.raises(PolicyError):  # an agent may not change a person's memory (issue 31)
        ws.edit_tags(a.id, add=["y"], remove=["x"], actor=Actor("codex"))
    ws.edit_tags(a.id, add=["y"], remove=["x"], actor=Actor())
    expired = ws.expire(a.id, "2030-01-01T10:00:00+02:00")
    assert expired.valid_to == "2030-01-01T08:00:00Z"
    with pytest.raises(UsageError):
        ws.expire(a.id, "tomorrow-ish")
    forgotten = ws.forget(a.id)
    assert not (ws.root / forgotten.path).exists()
    with pytest.raises(NotFound):
        ws.get(a.id)
    versions = history(ws, a.id)
    assert [v.op for v in versions] == ["forget", "expire", "tags", "link", "remember"]
    assert [v.changed for v in versions] == [
        ("deleted",),
        ("valid_to",),
        ("tags",),
        ("links",),
        ("created",),
    ]
    assert [v.actor for v in versions] == ["human", "human", "human", "human", "human"]
    assert versions[0].deleted
    assert all(len(v.commit) == 40 and v.date for v in versions)


def test_history_follows_a_rename_and_counts_hand_commits(ws: Workspace) -> None:
    memory = ws.remember("Will move.")
    (ws.root / "memories" / "sub").mkdir()
    git(ws.root, "mv", memory.path, "memories/sub/moved.md")
    git(ws.root, "commit", "-qm", "reorganise")
    path = ws.root / "memories" / "sub" / "moved.md"
    path.write_text(path.read_text().replace("Will move.", "Moved and edited."))
    git(ws.root, "commit", "-qam", "edit by hand")
    versions = history(ws, memory.id)
    assert [v.op for v in versions] == ["edit", "edit", "remember"]
    assert versions[0].changed == ("body",)
    assert versions[1].changed == ("path",)
    assert versions[0].actor == "human:Test Person"
    with pytest.raises(NotFound):
        history(ws, "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB")
    with pytest.raises(UsageError):
        history(ws, "../x")


# --- lock and config


def test_the_lock_serialises_writers_and_times_out(ws: Workspace) -> None:
    order: list[str] = []
    with workspace_lock(ws.root):
        assert lock_is_held(ws.root) == os.getpid()
        with pytest.raises(LockTimeout) as info, workspace_lock(ws.root, timeout=0.2):
            pass
        assert f"pid {os.getpid()}" in info.value.message
        assert info.value.hint

        def writer() -> None:
            with workspace_lock(ws.root, timeout=10):
                order.append("second")

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(0.2)
        order.append("first")
    thread.join()
    assert order == ["first", "second"]
    assert lock_is_held(ws.root) is None


def test_a_killed_writer_releases_the_lock(ws: Workspace) -> None:
    code = (
        "import sys, time; from pathlib import Path; from ee.store.files import workspace_lock\n"
        "with workspace_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [__import__("sys").executable, "-c", code, str(ws.root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    assert lock_is_held(ws.root) == proc.pid
    proc.kill()
    proc.wait()
    assert lock_is_held(ws.root) is None
    ws.remember("Written after the holder died.")


def test_config_errors_name_the_file_and_the_key(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ws.root / ".ee" / "config.toml"
    assert load_config(ws.root).get("lock.timeout") == 30.0
    config.write_text("[lock]\ntimeout = 5\n[store]\nmax_body_bytes = 1000\n")
    assert load_config(ws.root).get("lock.timeout") == 5
    assert load_config(ws.root).get("store.max_body_bytes") == 1000
    for text in (
        "[lock\n",
        "[lock]\ntimeout = 'soon'\n",
        "[hooks]\nblock = 1\n",
        "[sync]\nstrategy = 'yolo'\n",
        "[lock]\ntimeout = nan\n",
        "[lock]\ntimeout = -5\n",
        "[hooks]\ntimeout = inf\n",
        "[store]\nmax_body_bytes = -1\n",
    ):
        config.write_text(text)
        with pytest.raises(ConfigError) as info:
            load_config(ws.root)
        assert ".ee/config.toml" in info.value.message
        assert info.value.hint
    config.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError):
        load_config(ws.root)
    config.write_text("")
    monkeypatch.setenv("EE_LOCK_TIMEOUT", "soon")
    with pytest.raises(ConfigError):
        load_config(ws.root)
    monkeypatch.setenv("EE_LOCK_TIMEOUT", "2.5")
    assert load_config(ws.root).get("lock.timeout") == 2.5


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("[model]\ntransformer_max_memories = 1.5\n", "set transformer_max_memories to a whole number in "),
        ("[store]\nmax_body_bytes = 'big'\n", "set max_body_bytes to a whole number in "),
        ("[lock]\ntimeout = 'soon'\n", "set timeout to a number in "),
        ("[hooks]\nblock = 1\n", "set block to true or false in "),
        ("[sync]\nremote = 1\n", "set remote to text in "),
    ],
)
def test_a_setting_of_the_wrong_type_says_what_it_takes_in_words(
    ws: Workspace, text: str, wanted: str
) -> None:
    """Not a Python type's name ("set x to a int": QA of issue 35)."""
    (ws.root / ".ee" / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(ws.root)
    assert "has the wrong type" in info.value.message
    assert info.value.hint.startswith(wanted)
    assert info.value.hint.endswith(str(ws.root / ".ee" / "config.toml"))


@pytest.mark.parametrize("timeout", ["nan", "-1", "inf"])
def test_a_lock_timeout_that_never_ends_is_refused_not_waited(ws: Workspace, timeout: str) -> None:
    """A deadline of NaN is never reached: a writer behind another would have waited forever."""
    with workspace_lock(ws.root):  # another writer holds the lock (a real flock, seen by the process)
        proc = run_ee_process("remember", "a fact", cwd=ws.root, env={"EE_LOCK_TIMEOUT": timeout})
    assert proc.returncode == ExitCode.CONFIG, proc.stderr
    assert f"EE_LOCK_TIMEOUT={timeout!r}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_history_never_wanders_into_a_similar_memory(ws: Workspace) -> None:
    first = ws.remember("Alpha.", tags=["t"])
    second = ws.remember("Beta.", tags=["t"])  # git sees a near copy of the first file
    assert [v.op for v in history(ws, second.id)] == ["remember"]
    ws.forget(second.id)
    assert [v.op for v in history(ws, second.id)] == ["forget", "remember"]
    assert [v.op for v in history(ws, first.id)] == ["remember"]


def test_init_where_no_folder_can_be_made_and_writes_without_git(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        Workspace.init("/dev/null/ws")
    assert "cannot create" in info.value.message
    (tmp_path / "plain" / "memories").mkdir(parents=True)
    ws = Workspace(tmp_path / "plain")
    with pytest.raises(GitError) as git_info:
        ws.remember("No repository here.")
    assert git_info.value.hint.startswith("run: ee init")
    assert list((tmp_path / "plain" / "memories").iterdir()) == []


def test_init_appends_to_a_crlf_gitignore_in_its_line_ending(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "win", {"README.md": "hi\n"})
    (root / ".gitignore").write_bytes(b"bin/\r\nobj/")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "ignore")
    Workspace.init(root)
    assert (root / ".gitignore").read_bytes() == b"bin/\r\nobj/\r\n.ee/*\r\n!.ee/config.toml\r\n.ee-tmp-*\r\n"
    assert git(root, "status", "--porcelain") == ""


def test_commits_after_a_users_commit_keep_the_users_work(ws: Workspace) -> None:
    """ee keeps its own index file between commits; a commit made by someone else in between must never be
    undone by ee's next commit, whatever the kept file holds."""
    first = ws.remember("First.")
    (ws.root / "app.txt").write_text("user's work\n")
    git(ws.root, "add", "app.txt")
    git(ws.root, "commit", "-qm", "user adds app.txt")
    hand = ws.root / "memories" / "hand.md"
    hand.write_text("A hand-written memory, committed by the user.\n")
    git(ws.root, "add", "memories/hand.md")
    git(ws.root, "commit", "-qm", "user adds a memory")
    second = ws.remember("Second.")
    tree = git(ws.root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert {"app.txt", "memories/hand.md", first.path, second.path} <= set(tree)
    git(ws.root, "rm", "-q", "app.txt")
    git(ws.root, "commit", "-qm", "user removes app.txt")
    ws.edit_tags(first.id, add=["x"])
    assert "app.txt" not in git(ws.root, "ls-tree", "-r", "--name-only", "HEAD").split()
    git(ws.root, "reset", "-q", "--hard", "HEAD~3")  # the user rewinds past ee's commits
    third = ws.remember("Third.")
    tree = git(ws.root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert second.path not in tree
    assert {first.path, third.path} <= set(tree)
    assert git(ws.root, "status", "--porcelain") == ""


def test_a_damaged_or_locked_kept_index_is_rebuilt(ws: Workspace) -> None:
    ws.remember("Builds the kept index.")
    kept = [p for p in (ws.root / ".git" / "ee").iterdir() if "." not in p.name]
    assert len(kept) == 1
    kept[0].write_bytes(b"garbage, not an index")
    kept[0].with_name(kept[0].name + ".lock").write_text("")
    memory = ws.remember("Still commits.")
    assert git(ws.root, "show", "--format=", "--name-only", "HEAD").split() == [memory.path]
    assert len(git(ws.root, "ls-tree", "-r", "--name-only", "HEAD", "memories").split()) == 3


def test_the_kept_index_is_split_and_survives_losing_its_shared_part(ws: Workspace) -> None:
    """ee's kept index is a split index (its entries in .git/sharedindex.*, each commit writing only what
    changed). If git expires that shared file, the next commit rebuilds the index from HEAD."""
    first = ws.remember("Builds the kept index.")
    git_dir = ws.root / ".git"
    assert list(git_dir.glob("sharedindex.*"))
    kept = next(p for p in (git_dir / "ee").iterdir() if "." not in p.name)
    assert b"link" in kept.read_bytes()  # the split index's extension naming its shared file
    second = ws.remember("Written with the split index.")
    assert git(ws.root, "show", "--format=", "--name-only", "HEAD").split() == [second.path]
    for path in git_dir.glob("sharedindex.*"):
        path.unlink()
    third = ws.remember("Still commits once the shared part is gone.")
    assert git(ws.root, "show", "--format=", "--name-only", "HEAD").split() == [third.path]
    tree = git(ws.root, "ls-tree", "-r", "--name-only", "HEAD", "memories").split()
    assert {first.path, second.path, third.path} <= set(tree)
    assert git(ws.root, "status", "--porcelain") == ""
    assert "sharedindex" not in git(ws.root, "ls-files", "--others")


def test_every_commit_is_exact_whatever_happened_to_head_meanwhile(tmp_path: Path) -> None:
    """Whatever happened between two of ee's commits (a user's commit, packed refs, a detached HEAD, a
    linked worktree, a workspace in a sub-folder), every commit holds exactly what it should."""
    root = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    ws, _ = Workspace.init(root / "sub" / "ws")
    first = ws.remember("First.")
    Workspace(ws.root).remember("Second.")  # a fresh process's view: nothing learnt yet

    def check(*expected: str) -> None:
        listed = set(git(root, "ls-tree", "-r", "--name-only", "HEAD").split())
        assert {f"sub/ws/{p}" for p in expected} | {"README.md"} <= listed
        assert git(root, "status", "--porcelain") == ""

    (root / "app.txt").write_text("user's work\n")
    git(root, "add", "app.txt")
    git(root, "commit", "-qm", "user's commit")
    third = Workspace(ws.root).remember("After a user's commit.")
    assert "app.txt" in git(root, "ls-tree", "--name-only", "HEAD").split()
    git(root, "pack-refs", "--all")
    fourth = Workspace(ws.root).remember("With packed refs.")
    check(first.path, third.path, fourth.path)
    git(root, "checkout", "-q", "--detach")
    fifth = Workspace(ws.root).remember("On a detached HEAD.")
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"
    check(fourth.path, fifth.path)
    git(root, "checkout", "-q", "main")
    git(root, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = Workspace(tmp_path / "side" / "sub" / "ws")
    side.remember("In a linked worktree.")
    side.remember("Again in the linked worktree.")
    assert git(tmp_path / "side", "status", "--porcelain") == ""
    assert len(git(tmp_path / "side", "log", "--format=%H", "main..side").split()) == 2
    assert git(root, "rev-parse", "HEAD").strip() == git(root, "rev-parse", "main").strip()


def test_a_bulk_commit_matches_what_git_add_would_commit(ws: Workspace) -> None:
    """From BULK_PATHS paths on, blobs go through one fast-import pack: the tree must be git's own."""
    from ee.git.repo import BULK_PATHS

    folder = ws.root / "memories" / "bulk"
    folder.mkdir()
    gone = ws.remember("Deleted in the bulk commit.")
    paths = []
    for n in range(BULK_PATHS + 20):
        (folder / f"m{n}.md").write_text(f"Memory {n}.\n" * (n % 7 + 1))
        paths.append(f"memories/bulk/m{n}.md")
    (folder / "run.md").write_text("executable\n")
    (folder / "run.md").chmod(0o755)
    (folder / "link.md").symlink_to("m1.md")
    (ws.root / gone.path).unlink()
    paths += ["memories/bulk/run.md", "memories/bulk/link.md", gone.path]
    with ws.lock():
        ws.git.commit_paths(paths, "bulk\n")
    env = {**os.environ, "GIT_INDEX_FILE": str(ws.root / ".git" / "check-index")}
    subprocess.run(["git", "read-tree", "HEAD~1"], cwd=ws.root, check=True, env=env)
    subprocess.run(["git", "add", "-A", "memories"], cwd=ws.root, check=True, env=env)
    want = subprocess.run(
        ["git", "write-tree"], cwd=ws.root, check=True, env=env, capture_output=True, text=True
    )
    assert git(ws.root, "rev-parse", "HEAD^{tree}").strip() == want.stdout.strip()
    assert git(ws.root, "status", "--porcelain") == ""
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=ws.root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_ee_reads_git_status_without_taking_gits_index_lock(ws: Workspace) -> None:
    """git status refreshes stale stat data in git's index by taking index.lock and rewriting the file;
    killed meanwhile (a Ctrl-C of ee's process group), it leaves the lock behind and every later git
    command fails. ee's reads pass --no-optional-locks: they never rewrite git's index."""
    import os
    import time

    memory = ws.remember("A memory whose file is touched.")
    index = ws.git.git_dir / "index"

    def touched() -> tuple[int, int]:  # stale stat data for git's index, then the index's own stat
        time.sleep(0.02)
        now = time.time_ns()
        os.utime(ws.root / memory.path, ns=(now, now))
        return index.stat().st_ino, index.stat().st_mtime_ns

    before = touched()
    assert ws.git.status_paths("memories") == {}
    assert ws.git.run("status", "--porcelain") == ""
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == before
    before = touched()
    git(ws.root, "status", "--porcelain")  # git's own status, with its optional lock: it rewrites it
    assert (index.stat().st_ino, index.stat().st_mtime_ns) != before
