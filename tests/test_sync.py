"""``ee sync`` against real git: a bare remote in a temporary folder and several clones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Result, doctor_report, git, run_cli

from ee.store import frontmatter
from ee.workspace import Workspace

BIN = str(Path(sys.executable).parent)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """An empty bare repository; the first clone's sync creates its ``main``."""
    subprocess.run(["git", "config", "--global", "init.defaultBranch", "main"], check=True)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    return bare


def clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True, capture_output=True)
    Workspace.init(dest)  # registers the merge driver in this clone's git config
    return dest


@pytest.fixture
def clones(remote: Path, tmp_path: Path) -> list[Path]:
    """Three clones of one store: the first seeds the remote, the others clone it."""
    first = clone(remote, tmp_path / "a")
    assert ee(first, "sync").code == 0
    return [first, clone(remote, tmp_path / "b"), clone(remote, tmp_path / "c")]


def ee(root: Path, *args: str, input: str | None = None) -> Result:  # noqa: A002
    return run_cli("--workspace", str(root), *args, "--json", input=input)


def remember(root: Path, text: str, *extra: str) -> str:
    result = ee(root, "remember", text, *extra)
    assert result.code == 0, result.err
    return str(result.data["id"])


def sync(root: Path, *args: str) -> dict:
    result = ee(root, "sync", *args)
    assert result.code == 0, result.err + result.out
    return result.data


def export(root: Path) -> str:
    target = root.parent / f"{root.name}-export.jsonl"
    result = run_cli("--workspace", str(root), "export", "jsonl", "--output", str(target))
    assert result.code == 0, result.err
    return target.read_text()


def memory_file(root: Path, memory_id: str) -> Path:
    return root / Workspace(root).get(memory_id).path


def add_event(root: Path, memory_id: str, event_id: str, signal: str) -> None:
    events = root / "memories" / ".events" / f"{memory_id}.jsonl"
    with events.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": event_id, "memory": memory_id, "signal": signal}) + "\n")


def git_env() -> dict[str, str]:
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}


# ---------------------------------------------------------------------------------------------- convergence


def test_concurrent_remember_in_three_clones_converges(clones: list[Path]) -> None:
    a, b, c = clones
    ids = {
        remember(root, f"{name} learned fact number {n}")
        for root, name in zip(clones, "abc", strict=True)
        for n in (1, 2)
    }
    for root in (b, c, a, b, c):  # any order; then a second round so everyone sees the last push
        sync(root)
    exports = [export(root) for root in clones]
    assert exports[0] == exports[1] == exports[2]
    assert {json.loads(line)["id"] for line in exports[0].splitlines()} == ids


def test_sync_report_names_what_came_in_and_went_out(clones: list[Path]) -> None:
    a, b, _ = clones
    mine, theirs = remember(b, "b writes one"), remember(a, "a writes one")
    sync(a)
    data = sync(b)
    assert data["integration"] == "rebase"
    assert data["pushed"] is True
    assert data["incoming"]["added"] == [theirs]
    assert [c["subject"] for c in data["incoming"]["commits"]] == ["ee: remember a writes one"]
    assert data["outgoing"]["added"] == [mine]
    assert data["outgoing"]["commits"][0]["subject"] == "ee: remember b writes one"
    again = sync(b)
    assert again["integration"] == "up-to-date"
    assert again["pushed"] is False
    assert again["incoming"]["commits"] == []
    remember(b, "b writes two")
    human = run_cli("--workspace", str(b), "sync", "--human").out
    assert "pulled: nothing new\npushed: 1 commit(s) (1 added)" in human  # what went where, plainly
    assert "up-to-date" not in human


def test_a_token_in_the_remote_url_is_never_printed(clones: list[Path], remote: Path) -> None:
    # CI clones with https://x-access-token:TOKEN@host/…; the report's url printed it as it was.
    a, _, _ = clones
    token = "ghp_" + "R8f2kQ9vLx3mZp7Wt1Yc5Nb0Hs4Jd6Ga2Ue8"
    git(a, "remote", "set-url", "origin", f"file://ci:{token}@{remote}")
    remember(a, "a writes one")
    result = ee(a, "sync")
    assert result.code == 0, result.err
    assert result.data["pushed"] is True
    assert result.data["url"] == f"file://ci:[REDACTED:github_token]@{remote}"
    assert token not in result.out + result.err


def test_a_secret_in_an_events_file_is_neither_committed_nor_pushed(clones: list[Path], remote: Path) -> None:
    # `ee outcome --reason` is guarded; a hand edit of the events file (or another tool's) was not, and
    # ee sync committed and pushed it.
    a, _, _ = clones
    memory_id = remember(a, "Run make lint before pushing.")
    assert sync(a)["pushed"] is True
    before = git(remote, "rev-parse", "main")
    event = {"id": "evt_1", "memory": memory_id, "signal": "helpful", "at": "2026-12-01T00:00:00Z"}
    token = "ghp_" + "R8f2kQ9vLx3mZp7Wt1Yc5Nb0Hs4Jd6Ga2Ue8"
    events = a / "memories" / ".events" / f"{memory_id}.jsonl"
    with events.open("a") as handle:
        handle.write(json.dumps({**event, "reason": f"used {token}"}) + "\n")
    result = ee(a, "sync")
    assert result.code == 6, result.out
    assert f"memories/.events/{memory_id}.jsonl:1 github_token" in result.json["error"]["message"]
    assert token not in result.out + result.err
    assert git(a, "status", "--porcelain").strip() == f"?? memories/.events/{memory_id}.jsonl"
    git(a, "add", "memories")
    git(a, "commit", "-q", "--no-verify", "-m", "by hand")
    result = ee(a, "sync")
    assert result.code == 6, result.out
    assert "nothing was pushed" in result.json["error"]["message"]
    assert git(remote, "rev-parse", "main") == before


def test_no_push_integrates_but_leaves_the_remote_alone(clones: list[Path], remote: Path) -> None:
    a, b, _ = clones
    remember(a, "a's memory")
    before = git(remote, "rev-parse", "main")
    data = sync(a, "--no-push")
    assert data["pushed"] is False
    assert data["ahead"] == 1
    assert git(remote, "rev-parse", "main") == before
    assert sync(b)["incoming"]["added"] == []


@pytest.mark.parametrize("strategy", ["rebase", "merge"])
def test_concurrent_tag_edits_and_events_lose_nothing(clones: list[Path], strategy: str) -> None:
    a, b, _ = clones
    memory_id = remember(a, "Clippy warnings are errors in CI", "--tags", "ci,rust")
    sync(a)
    sync(b)
    assert ee(a, "memory", "tags", memory_id, "--add", "lint", "--remove", "rust").code == 0
    assert ee(b, "memory", "tags", memory_id, "--add", "clippy").code == 0
    assert ee(b, "memory", "expire", memory_id, "--at", "2030-01-01T00:00:00Z").code == 0
    add_event(a, memory_id, "evt_a", "helpful")  # left uncommitted: sync commits it
    add_event(b, memory_id, "evt_b", "harmful")
    sync(a, "--strategy", strategy)
    data = sync(b, "--strategy", strategy)
    sync(a, "--strategy", strategy)
    assert data["conflicted"] == []
    for root in (a, b):
        memory = Workspace(root).get(memory_id)
        assert set(memory.tags) == {"ci", "lint", "clippy"}
        assert memory.valid_to == "2030-01-01T00:00:00Z"
        assert dict(memory.extra) == {}
        events = (root / "memories" / ".events" / f"{memory_id}.jsonl").read_text().splitlines()
        assert sorted(json.loads(line)["id"] for line in events) == ["evt_a", "evt_b"]
    assert export(a) == export(b)


def commit_as(root: Path, name: str, message: str) -> None:
    """``git commit -a`` by ``name`` (a hand edit committed by hand)."""
    who = {
        f"GIT_{role}_{part}": value
        for role in ("AUTHOR", "COMMITTER")
        for part, value in (("NAME", name), ("EMAIL", f"{name.lower()}@example.com"))
    }
    repo = Workspace(root).git.repo  # (the memory branch's worktree, if there is one)
    subprocess.run(["git", "commit", "-q", "-am", message], cwd=repo, env={**os.environ, **who}, check=True)


def conflicting_edits(clones: list[Path], strategy: str, old: str, texts: tuple[str, str]) -> str:
    """A memory ``old`` in every clone, then a different body edit committed in a (Alice) and in b (Bob);
    a syncs; b has not yet."""
    a, b, c = clones
    memory_id = remember(a, old)
    sync(a)
    sync(b)
    sync(c)
    for root, text, name in zip((a, b), texts, ("Alice", "Bob"), strict=True):
        path = memory_file(root, memory_id)
        path.write_text(path.read_text().replace(old, text))
        commit_as(root, name, f"edit: {text}")
    sync(a, "--strategy", strategy)
    return memory_id


def no_markers_anywhere(root: Path, remote: Path, branch: str = "main", folder: str = "memories") -> None:
    for path in (root / "memories").rglob("*.md"):
        assert "<<<<<<<" not in path.read_text(), path
        assert ">>>>>>>" not in path.read_text(), path
    pattern = "^(<{7}|>{7}|={7}$)"
    grep = subprocess.run(["git", "grep", "-q", "-E", pattern, branch, "--", folder], cwd=remote, check=False)
    assert grep.returncode == 1, "the remote holds git conflict markers"


@pytest.mark.parametrize("strategy", ["rebase", "merge"])
def test_conflicting_body_edits_read_cleanly_and_resolve_by_label_in_both_clones(
    clones: list[Path], remote: Path, strategy: str
) -> None:
    a, b, c = clones
    memory_id = conflicting_edits(
        clones, strategy, "Deploy with make deploy", ("Deploy with make release", "Deploy with deploy.sh")
    )
    data = sync(b, "--strategy", strategy)
    sync(a, "--strategy", strategy)
    sync(c, "--strategy", strategy)
    (listed,) = data["conflicted"]  # sync ends by naming what needs resolving, and how
    assert listed["id"] == memory_id
    assert listed["resolve"] == f"ee memory resolve {memory_id} --pick local|remote|both"
    assert [(v["author"], v["side"]) for v in listed["versions"]] == (
        [("Alice", "remote"), ("Bob", "local")]
        if strategy == "rebase"
        else [("Bob", "local"), ("Alice", "remote")]
    )
    human = run_cli("--workspace", str(b), "sync", "--human")
    assert f"ee memory resolve {memory_id} --pick local|remote|both" in human.out
    for root in (a, b, c):
        no_markers_anywhere(root, remote)
        memory = Workspace(root).get(memory_id)
        assert dict(memory.extra)["conflict"] is True
        assert "Deploy with make release" in memory.body
        assert "Deploy with deploy.sh" in memory.body
        listing = ee(root, "memory", "list").data["memories"]
        entry = next(m for m in listing if m["id"] == memory_id)
        assert entry["conflict"] is True
        assert entry["title"] in ("Deploy with make release", "Deploy with deploy.sh")
        hit = ee(root, "search", "deploy").data["hits"][0]
        assert hit["id"] == memory_id
        assert hit["title"] == entry["title"]
        assert "conflicted" in hit["flags"]
        assert hit["posture"] == "advisory"  # until resolved
    pack = ee(b, "context", "how do we deploy").data
    (item,) = [i for section in pack["sections"] for i in section["items"] if i["id"] == memory_id]
    assert item["authoritative"] is False
    assert "conflicted" in item["flags"]
    assert item["title"] == Workspace(b).get(memory_id).title
    # "local" is each clone's own text, whichever of git's sides it was: a keeps a's, b keeps b's
    assert ee(c, "memory", "resolve", memory_id, "--pick", "local").code == 2  # c wrote neither
    for root, own, other in ((a, "make release", "deploy.sh"), (b, "deploy.sh", "make release")):
        probe = ee(root, "memory", "resolve", memory_id, "--pick", "local")
        assert probe.code == 0, probe.err
        body = Workspace(root).get(memory_id).body
        assert body == f"Deploy with {own}"
        git(root, "reset", "-q", "--hard", "HEAD~1")  # undo: now the other label
        assert ee(root, "memory", "resolve", memory_id, "--pick", "remote").code == 0
        assert Workspace(root).get(memory_id).body == f"Deploy with {other}"
        git(root, "reset", "-q", "--hard", "HEAD~1")
    head = git(b, "rev-parse", "HEAD")
    resolved = ee(b, "memory", "resolve", memory_id, "--pick", "remote")  # b settles on a's text
    assert resolved.code == 0, resolved.err
    assert git(b, "rev-parse", "HEAD~1") == head  # one commit
    text = memory_file(b, memory_id).read_text()
    assert "conflict" not in text
    assert "ee:version" not in text
    assert not any(p["code"] == "memory_conflicted" for p in doctor_report(ee(b, "doctor").json)["problems"])
    assert sync(b)["conflicted"] == []
    assert sync(a)["conflicted"] == []
    assert Workspace(a).get(memory_id).body == "Deploy with make release"
    assert export(a) == export(b)


def test_sync_never_commits_a_hand_made_text_merge_with_git_markers(clones: list[Path], remote: Path) -> None:
    a, _, _ = clones
    memory_id = remember(a, "Ports: 8080")
    sync(a)
    path = memory_file(a, memory_id)
    path.write_text(
        path.read_text().replace("Ports: 8080", "<<<<<<< HEAD\nPorts: 8081\n=======\nPorts: 9090\n>>>>>>> x")
    )
    data = sync(a)
    (skipped,) = data["skipped"]
    assert skipped["path"] == Workspace(a).get(memory_id).path
    assert "conflict markers" in skipped["message"]
    no_markers_anywhere(a / "nowhere", remote)  # the remote has none
    assert "<<<<<<<" in path.read_text()  # the person's file is left as it is


def test_resolve_by_commit_or_author_and_both(clones: list[Path]) -> None:
    _, b, _ = clones
    memory_id = conflicting_edits(clones, "rebase", "Port 8080", ("Port 8081", "Port 9090"))
    data = sync(b)
    commits = {v["author"]: v["commit"] for v in data["conflicted"][0]["versions"]}
    listing = ee(b, "memory", "resolve", memory_id)  # no --pick: the versions are shown
    assert listing.code == 2
    assert "Alice, commit" in listing.json["error"]["message"]
    assert "(local)" in listing.json["error"]["message"]
    assert ee(b, "memory", "resolve", memory_id, "--pick", commits["Alice"][:7]).code == 0
    assert Workspace(b).get(memory_id).body == "Port 8081"
    git(b, "reset", "-q", "--hard", "HEAD~1")
    assert ee(b, "memory", "resolve", memory_id, "--pick", "bob").code == 0
    assert Workspace(b).get(memory_id).body == "Port 9090"
    git(b, "reset", "-q", "--hard", "HEAD~1")
    assert ee(b, "memory", "resolve", memory_id, "--pick", "both").code == 0
    assert Workspace(b).get(memory_id).body == "Port 8081\n\nPort 9090"


def test_resolve_with_a_text_file(clones: list[Path], tmp_path: Path) -> None:
    a, b, _ = clones
    memory_id = remember(a, "Cache lives in /var/cache/app")
    sync(a)
    sync(b)
    for root, text in ((a, "Cache lives in /tmp/app"), (b, "Cache lives in ~/.cache/app")):
        path = memory_file(root, memory_id)
        path.write_text(path.read_text().replace("Cache lives in /var/cache/app", text))
    sync(a)
    sync(b)
    chosen = tmp_path / "body.md"
    chosen.write_text("Cache lives in $XDG_CACHE_HOME/app\n")
    assert ee(b, "memory", "resolve", memory_id, "--pick", "local", "--text", str(chosen)).code == 2
    result = ee(b, "memory", "resolve", memory_id, "--text", str(chosen))
    assert result.code == 0, result.err
    assert Workspace(b).get(memory_id).body == "Cache lives in $XDG_CACHE_HOME/app"
    again = ee(b, "memory", "resolve", memory_id, "--pick", "local")
    assert again.code == 2
    assert "no conflict" in again.json["error"]["message"]


def test_strategy_and_remote_come_from_the_config(clones: list[Path]) -> None:
    a, b, _ = clones
    git(b, "remote", "add", "team", git(b, "remote", "get-url", "origin").strip())
    config = b / ".ee" / "config.toml"
    config.write_text(config.read_text().replace("[sync]", '[sync]\nremote = "team"\nstrategy = "merge"'))
    remember(a, "from a")
    sync(a)
    remember(b, "from b")
    data = sync(b)
    assert (data["remote"], data["integration"]) == ("team", "merge")
    assert git(b, "log", "-1", "--format=%s") == "ee: sync merge team/main\n"
    assert ".ee/config.toml" in git(b, "show", "--name-only", "--format=", data["committed"])


@pytest.mark.parametrize("first", ["forgetter", "editor"])
@pytest.mark.parametrize("strategy", ["rebase", "merge"])
def test_a_memory_forgotten_on_one_side_and_edited_on_the_other_is_kept(
    clones: list[Path], first: str, strategy: str
) -> None:
    a, b, _ = clones
    memory_id = remember(a, "Keep me unless everyone agrees")
    sync(a)
    sync(b)
    assert ee(a, "memory", "forget", memory_id).code == 0
    assert ee(b, "memory", "tags", memory_id, "--add", "still-useful").code == 0
    order = (a, b) if first == "forgetter" else (b, a)
    for root in (*order, order[0]):
        sync(root, "--strategy", strategy)
    for root in (a, b):
        assert Workspace(root).get(memory_id).tags == ("still-useful",)
        assert git(root, "status", "--porcelain") == ""
    assert export(a) == export(b)


def test_an_unmergeable_memory_stops_the_sync_and_changes_nothing(clones: list[Path]) -> None:
    a, b, _ = clones
    memory_id = remember(a, "Shared memory")
    sync(a)
    sync(b)
    path = memory_file(a, memory_id)
    path.write_text(path.read_text().replace("kind: fact", "kind: [fact"))  # broken by hand, pushed by git
    git(a, "commit", "-q", "-am", "hand edit")
    git(a, "push", "-q", "origin", "HEAD:main")
    assert ee(b, "memory", "tags", memory_id, "--add", "b").code == 0
    head, text = git(b, "rev-parse", "HEAD"), memory_file(b, memory_id).read_text()
    result = ee(b, "sync")
    assert result.code == 8
    error = result.json["error"]
    assert error["details"]["paths"] == [memory_file(b, memory_id).relative_to(b).as_posix()]
    assert "git pull --rebase origin main" in error["repair"]
    assert git(b, "rev-parse", "HEAD") == head
    assert memory_file(b, memory_id).read_text() == text
    assert git(b, "status", "--porcelain") == ""


def test_two_syncs_racing_to_push_both_succeed(clones: list[Path]) -> None:
    a, b, c = clones
    ids = {remember(a, "a races"), remember(b, "b races"), remember(c, "c races")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ee", "--workspace", str(root), "sync", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=git_env(),
        )
        for root in clones
    ]
    results = [(proc.wait(timeout=120), *proc.communicate()) for proc in procs]
    for code, out, err in results:
        assert code == 0, err
        assert json.loads(out)["data"]["pushed"] is True
    for root in clones:
        sync(root)
    assert export(a) == export(b) == export(c)
    assert {json.loads(line)["id"] for line in export(a).splitlines()} == ids


# ------------------------------------------------------------------------------------ code repositories


def code_clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True, capture_output=True)
    Workspace.init(dest / "docs" / "memory")
    return dest


@pytest.fixture
def code_clones(remote: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of a code repository whose ee store lives in docs/memory/."""
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(remote), str(seed)], check=True, capture_output=True)
    for rel, text in {"src/app.py": "print('app')\n", "src/util.py": "X = 1\n", "README.md": "hi\n"}.items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text)
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "code")
    git(seed, "push", "-q", "origin", "HEAD:main")
    a = code_clone(remote, tmp_path / "a")
    sync(a / "docs" / "memory")
    b = code_clone(remote, tmp_path / "b")
    return a, b


def test_sync_in_a_code_repository_keeps_the_users_uncommitted_work(code_clones: tuple[Path, Path]) -> None:
    a, b = code_clones
    store_a, store_b = a / "docs" / "memory", b / "docs" / "memory"
    remember(store_a, "from a")
    sync(store_a)
    remember(store_b, "from b")  # diverged: sync must rebase
    (b / "src" / "app.py").write_text("print('staged')\n")
    git(b, "add", "src/app.py")
    (b / "src" / "app.py").write_text("print('staged then edited')\n")
    (b / "src" / "util.py").write_text("X = 2  # unstaged\n")
    (b / "scratch.txt").write_text("untracked\n")
    data = sync(store_b)
    assert data["integration"] == "rebase"
    assert git(b, "show", ":src/app.py") == "print('staged')\n"  # the index is as it was
    assert (b / "src" / "app.py").read_text() == "print('staged then edited')\n"
    assert (b / "src" / "util.py").read_text() == "X = 2  # unstaged\n"
    assert (b / "scratch.txt").read_text() == "untracked\n"
    status = git(b, "status", "--porcelain").splitlines()
    assert set(status) == {"?? scratch.txt", "MM src/app.py", " M src/util.py"}
    assert git(b, "log", "--format=%s", "origin/main", "--", "src").split("\n")[:-1] == ["code"]
    assert git(b, "stash", "list") == ""
    sync(store_a)
    assert export(store_a) == export(store_b)


def test_sync_refuses_when_incoming_changes_touch_uncommitted_files(code_clones: tuple[Path, Path]) -> None:
    a, b = code_clones
    (a / "src" / "util.py").write_text("X = 3\n")
    git(a, "commit", "-q", "-am", "change util")
    git(a, "push", "-q", "origin", "HEAD:main")
    (b / "src" / "util.py").write_text("X = 4  # mine\n")
    head = git(b, "rev-parse", "HEAD")
    result = ee(b / "docs" / "memory", "sync")
    assert result.code == 8
    assert "src/util.py" in result.json["error"]["message"]
    assert git(b, "rev-parse", "HEAD") == head
    assert (b / "src" / "util.py").read_text() == "X = 4  # mine\n"


def test_sync_commits_only_ee_paths_and_skips_broken_memories(clones: list[Path]) -> None:
    a = clones[0]
    (a / "memories" / "by-hand.md").write_text("A memory written in an editor.\n")
    (a / "memories" / "broken.md").write_text("---\nlevel: [unclosed\n---\nbody\n")
    (a / "notes.txt").write_text("the user's own file\n")
    result = ee(a, "sync")
    assert result.code == 0, result.err
    assert [d["path"] if "path" in d else d["message"] for d in result.json["degraded"]]
    assert "memories/broken.md" in result.json["degraded"][0]["message"]
    committed = git(a, "show", "--name-only", "--format=", result.data["committed"]).split()
    assert committed == ["memories/by-hand.md"]
    assert "?? memories/broken.md" in git(a, "status", "--porcelain")
    assert "?? notes.txt" in git(a, "status", "--porcelain")


# ---------------------------------------------------------------------------------------------- errors


def test_no_remote_is_a_clear_error(ws: Workspace) -> None:
    result = ee(ws.root, "sync")
    assert result.code == 3
    error = result.json["error"]
    assert "no git remote named 'origin'" in error["message"]
    assert "git remote add origin" in error["repair"]
    git(ws.root, "remote", "add", "team", "/nowhere")
    assert "(this repository has: team)" in ee(ws.root, "sync", "--remote", "other").json["error"]["message"]


def test_unreachable_remote_is_a_clear_error(ws: Workspace, tmp_path: Path) -> None:
    git(ws.root, "remote", "add", "origin", str(tmp_path / "nowhere.git"))
    result = ee(ws.root, "sync")
    assert result.code == 4
    error = result.json["error"]
    assert error["details"]["reason"] == "unreachable"
    assert "git remote get-url origin" in error["repair"]


def test_auth_failure_is_a_clear_error(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_ssh = tmp_path / "fake-ssh"
    fake_ssh.write_text("#!/bin/sh\necho 'git@example.com: Permission denied (publickey).' >&2\nexit 255\n")
    fake_ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(fake_ssh))
    git(ws.root, "remote", "add", "origin", "git@example.com:team/memories.git")
    result = ee(ws.root, "sync")
    assert result.code == 4
    error = result.json["error"]
    assert error["details"]["reason"] == "auth"
    assert "Permission denied" in error["message"]
    assert "credential" in error["repair"]


# ---------------------------------------------------------------------------------------------- plain git


def test_plain_git_pull_uses_the_driver_when_registered(clones: list[Path]) -> None:
    a, b, _ = clones
    memory_id = remember(a, "Pin the toolchain", "--tags", "rust")
    sync(a)
    sync(b)
    assert ee(a, "memory", "tags", memory_id, "--add", "toolchain").code == 0
    assert ee(b, "memory", "tags", memory_id, "--add", "ci").code == 0
    sync(a)
    pull = subprocess.run(
        ["git", "pull", "-q", "--no-rebase", "--no-edit"],
        cwd=b,
        env=git_env(),
        capture_output=True,
        text=True,
    )
    assert pull.returncode == 0, pull.stderr
    assert Workspace(b).get(memory_id).tags == ("rust", "ci", "toolchain")


def test_plain_git_pull_without_the_driver_is_parseable_or_a_clear_conflict(clones: list[Path]) -> None:
    a, b, _ = clones
    first = remember(a, "First memory body line", "--tags", "one")
    second = remember(a, "Second memory body line", "--tags", "two")
    sync(a)
    sync(b)
    git(b, "config", "--remove-section", "merge.ee-memory")  # as in a plain `git clone`
    # Disjoint lines (tags vs body) merge as text into a correct file; the same line is a git conflict.
    assert ee(a, "memory", "tags", first, "--add", "from-a").code == 0
    assert ee(a, "memory", "tags", second, "--add", "from-a").code == 0
    sync(a)
    path = memory_file(b, first)
    path.write_text(path.read_text().replace("First memory body line", "First memory body, edited in b"))
    git(b, "commit", "-q", "-am", "edit body")
    assert ee(b, "memory", "tags", second, "--add", "from-b").code == 0
    pull = subprocess.run(["git", "pull", "--no-rebase", "--no-edit"], cwd=b, capture_output=True, text=True)
    assert pull.returncode != 0
    assert "CONFLICT" in pull.stdout + pull.stderr
    unmerged = git(b, "diff", "--name-only", "--diff-filter=U").split()
    assert unmerged == [Workspace(b).store.snapshot().problems[0].path]  # the conflicted file does not parse
    memory, _ = frontmatter.parse(path.read_text(), "first.md")
    assert memory.tags == ("one", "from-a")
    assert memory.body == "First memory body, edited in b"
    result = ee(b, "sync")
    assert result.code == 8  # ee does not step into an unfinished merge
    assert "git merge --abort" in result.json["error"]["repair"]


def test_git_markers_from_a_merge_without_ee_s_driver_are_named_at_their_line(ws: Workspace) -> None:
    """A clone that never ran `ee init` merges memory files as text: ``ee doctor`` said the memory held
    several versions (no line) and repaired with ``--pick local|remote``, which cannot tell git's two
    sides apart, and which is refused while the merge is going on. It now names the first marker's
    line and the labels to pick, and that repair works once the merge is committed."""
    root = ws.root
    git(root, "config", "--remove-section", "merge.ee-memory")
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    rel = "memories/deploy.md"
    memory_id = "mem_01AAAAAAAAAAAAAAAAAAAAAAAA"
    (root / rel).write_text(f"---\nid: {memory_id}\n---\nDeploy on Tuesdays.\n")
    git(root, "add", rel)
    git(root, "commit", "-qm", "deploy")
    git(root, "checkout", "-qb", "feat")
    (root / rel).write_text(f"---\nid: {memory_id}\n---\nDeploy on Wednesdays.\n")
    git(root, "commit", "-qam", "feat")
    git(root, "checkout", "-q", branch)
    (root / rel).write_text(f"---\nid: {memory_id}\n---\nDeploy on Thursdays.\n")
    git(root, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "feat"], cwd=root, capture_output=True, check=False)
    assert (root / rel).read_text().splitlines()[3] == "<<<<<<< HEAD"
    res = run_cli("-W", str(root), "doctor", "--json")
    (problem,) = [p for p in doctor_report(res.json)["problems"] if p["code"] == "memory_conflicted"]
    assert problem["path"] == rel
    assert problem["line"] == 4
    assert problem["repair"].endswith(f"ee memory resolve {memory_id} --pick HEAD|feat|both")
    git(root, "commit", "-qam", "merge feat, markers and all")
    res = run_cli("-W", str(root), "memory", "resolve", memory_id, "--pick", "HEAD", "--json")
    assert res.code == 0, res.out + res.err
    assert res.data["memory"]["body"] == "Deploy on Thursdays."
