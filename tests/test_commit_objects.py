"""Commits whose blobs and trees ee writes in-process (ee/gitobjects.py) must be exactly git's own.

Every commit here is compared with what git's plumbing makes from the same parent, paths and message
(``read-tree`` + ``update-index`` + ``write-tree`` + ``commit-tree``, fixed dates), and the repository
must pass ``git fsck --strict``. Unusual cases must take git's path and still be exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, make_repo

from ee.errors import GitError
from ee.gitrepo import Git
from ee.workspace import Workspace

DATES = {"GIT_AUTHOR_DATE": "1700000000 +0100", "GIT_COMMITTER_DATE": "1700000100 -0230"}


@pytest.fixture(autouse=True)
def _fixed_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in DATES.items():
        monkeypatch.setenv(name, value)


def _commands(root: Path, action: Callable[[], object]) -> list[str]:
    """The git commands ``action()`` runs (git's own trace2 log)."""
    log = root.parent / "trace2.log"
    os.environ["GIT_TRACE2_EVENT"] = str(log)
    try:
        action()
    finally:
        del os.environ["GIT_TRACE2_EVENT"]
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    log.unlink()
    return [str(json.loads(line).get("name")) for line in lines if '"cmd_name"' in line]


def _gits_commit(root: Path, parent: str, repo_paths: list[str], message: str) -> str:
    """The commit git's plumbing makes of ``repo_paths``' working state on top of ``parent`` (``parent``
    itself when the tree stays the same, as ee does)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(root.parent / "check-index")}

    def run(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, env=env, input=data, capture_output=True, text=True, check=True
        ).stdout.strip()

    run("read-tree", parent)
    run("update-index", "--add", "--remove", "-z", "--stdin", data="".join(p + "\0" for p in repo_paths))
    tree = run("write-tree")
    os.unlink(env["GIT_INDEX_FILE"])
    if tree == run("rev-parse", parent + "^{tree}"):
        return parent
    return run("commit-tree", tree, "-p", parent, "-F", "-", data=message)


def _commit(
    git_: Git, root: Path, paths: list[str], message: str, *, fast: bool, own_commit: bool | None = None
) -> str:
    """ee commits ``paths``; the commit must be git's, made the expected way (trees in-process when
    ``fast``; the commit object too when ``own_commit``, default ``fast``), and leave status clean."""
    parent = git(root, "rev-parse", "HEAD").strip()
    made: list[str] = []
    commands = _commands(root, lambda: made.append(git_.commit_paths(paths, message)))
    assert ("write-tree" not in commands) is fast, commands
    if made[0] != parent:
        assert ("commit-tree" not in commands) is (fast if own_commit is None else own_commit), commands
    repo_paths = [git_.repo_path(p) for p in paths]
    assert made[0] == _gits_commit(root, parent, repo_paths, message)
    assert git(root, "rev-parse", "HEAD").strip() == made[0]
    assert git(root, "status", "--porcelain", "--", *repo_paths) == ""
    return made[0]


def _forget_this_process_trees() -> None:
    from ee import gitobjects

    gitobjects._LAST_TREES.clear()
    gitobjects._LAST_PIECES.clear()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("sub", ["", "sub/ws/"])
def test_in_process_trees_equal_gits_for_adds_edits_deletes_and_folders(tmp_path: Path, sub: str) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "hi\n", "src/app.py": "print(1)\n"})
    ws, _ = Workspace.init(root / sub)
    ws.remember("First memory, to give ee's note a commit of its own.")
    top = ws.root
    steps: list[tuple[list[str], dict[str, str | None]]] = [
        (["memories/new-one-abcdefgh.md"], {"memories/new-one-abcdefgh.md": "one\n"}),
        (["memories/new-one-abcdefgh.md"], {"memories/new-one-abcdefgh.md": "one, edited\n"}),
        # names that sort around a folder's name: "a.md" < "a/" < "a0.md" in git's tree order
        (
            ["memories/a/x.md", "memories/a.md", "memories/a0.md", "memories/a-b.md"],
            {
                "memories/a/x.md": "x\n",
                "memories/a.md": "a\n",
                "memories/a0.md": "0\n",
                "memories/a-b.md": "-",
            },
        ),
        (["memories/a/b/c/deep.md"], {"memories/a/b/c/deep.md": "deep\n"}),
        (["memories/a/b/c/deep.md"], {"memories/a/b/c/deep.md": None}),  # the emptied folders go
        (["memories/a/x.md", "memories/a.md"], {"memories/a/x.md": None, "memories/a.md": None}),
        (["memories/never-existed.md"], {"memories/never-existed.md": None}),  # nothing changes
        (["memories/.events/x.jsonl"], {"memories/.events/x.jsonl": '{"e": 1}\n'}),
    ]
    for number, (paths, files) in enumerate(steps):
        for rel, text in files.items():
            if text is None:
                (top / rel).unlink(missing_ok=True)
            else:
                _write(top, rel, text)
        before = git(root, "rev-parse", "HEAD").strip()
        made = _commit(ws.git, root, paths, f"ee: step {number}\n\nEe-Op: test\n", fast=True)
        if number == 6:
            assert made == before
    assert "memories/a/" not in git(root, "ls-tree", "-r", "--name-only", "HEAD")
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=root, check=True, capture_output=True)
    assert git(root, "status", "--porcelain") == ""


def test_a_remember_commit_is_gits_own_with_identity_dates_and_trailers(ws: Workspace) -> None:
    ws.remember("First.")
    parent = git(ws.root, "rev-parse", "HEAD").strip()
    commands = _commands(ws.root, lambda: ws.remember("Second, made in-process."))
    assert "write-tree" not in commands
    assert "commit-tree" not in commands
    head = git(ws.root, "rev-parse", "HEAD").strip()
    message = git(ws.root, "log", "-1", "--format=%B", "HEAD")
    changed = git(ws.root, "show", "--format=", "--name-only", "HEAD").split()
    assert head == _gits_commit(ws.root, parent, changed, message.rstrip("\n") + "\n")
    shown = git(ws.root, "log", "-1", "--format=%an <%ae> %ad|%cn <%ce> %cd", "--date=raw", "HEAD")
    assert (
        shown.strip()
        == "Test Person <test@example.com> 1700000000 +0100|Test Person <test@example.com> 1700000100 -0230"
    )
    assert "Ee-Op: remember" in message
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=ws.root, check=True, capture_output=True)


def test_the_tree_cache_is_checked_and_git_fills_in_for_it(ws: Workspace) -> None:
    """A damaged cache, a missing one or trees packed away by gc: the trees come from git, still exact."""
    ws.remember("First.")
    cache = ws.git.git_dir / "ee" / "trees.cache"
    assert cache.exists()
    for where in ("compressed", "raw"):
        _forget_this_process_trees()  # as a fresh process: the cache file is all there is
        data = bytearray(cache.read_bytes())
        header = data.index(b"\n")
        raw_end = header + 1 + int(data[:header].split()[1])
        data[raw_end + 10 if where == "compressed" else raw_end - 5] ^= 0xFF
        cache.write_bytes(bytes(data))
        _write(ws.root, f"memories/after-damage-{where}.md", f"after damage to the {where} part\n")
        _commit(ws.git, ws.root, [f"memories/after-damage-{where}.md"], "damaged\n", fast=True)
        subprocess.run(["git", "fsck", "--strict"], cwd=ws.root, check=True, capture_output=True)
    cache.unlink()
    _forget_this_process_trees()
    git(ws.root, "repack", "-a", "-d", "-q")
    git(ws.root, "prune-packed")
    assert not list((ws.git.git_dir / "objects").glob("??/*"))  # every tree now sits in a pack
    _write(ws.root, "memories/after-gc.md", "after gc\n")
    _commit(ws.git, ws.root, ["memories/after-gc.md"], "packed\n", fast=True)


def test_trees_compressed_piece_by_piece_are_valid_and_a_damaged_cache_is_never_used(tmp_path: Path) -> None:
    """The pieces an earlier tree shared are reused from the tree cache; a cache whose compressed pieces
    were damaged is not (they would make an object that does not inflate to the tree)."""
    import random
    import zlib

    from ee.gitobjects import (
        TREE_CACHE,
        Plan,
        _deflate,
        _Editor,
        _entries,
        _known_pieces,
        object_id,
        remember_trees,
    )

    rng = random.Random(7)
    entries = sorted(
        b"100644 memory-%05d.md\x00" % n + bytes(rng.randrange(256) for _ in range(20)) for n in range(3000)
    )
    raw = b"".join(entries)
    full = b"tree %d\x00" % len(raw) + raw
    stream, pairs = _deflate(full, {})
    pieces = [done for _piece, done in pairs]
    assert len(pieces) > 5
    assert zlib.decompress(stream) == full
    assert len(stream) < len(zlib.compress(full, 1)) * 1.05  # as small as one stream, near enough
    known = _known_pieces(raw, pieces)
    assert known == dict(pairs)
    edited_raw = raw[: len(raw) // 2] + b"100644 memory-inserted.md\x00" + bytes(20) + raw[len(raw) // 2 :]
    edited = b"tree %d\x00" % len(edited_raw) + edited_raw
    again, new_pieces = _deflate(edited, known)
    assert zlib.decompress(again) == edited
    assert sum(done in pieces for _piece, done in new_pieces) >= len(pieces) - 3  # reused, not made again

    git_dir = tmp_path / ".git"
    (git_dir / "ee").mkdir(parents=True)
    tree = object_id(b"tree", raw)
    remember_trees(git_dir, Plan(tree=tree, trees={tree: raw}, entries={tree: _entries(raw)}), {tree: pairs})

    asked: list[str] = []

    def from_git(ids: object) -> dict[str, bytes]:  # what git's object store answers
        asked.append(tree)
        return {tree: raw}

    def reader() -> _Editor:
        editor = _Editor(git_dir, from_git)
        assert editor.read(tree) == raw
        return editor

    assert len(reader().known) == len(pieces)
    assert asked == []  # from the cache
    cache = git_dir / "ee" / TREE_CACHE
    for where in (-100, len(b"%s %d %d " % (tree.encode(), len(raw), len(pieces))) + 60):
        remember_trees(
            git_dir, Plan(tree=tree, trees={tree: raw}, entries={tree: _entries(raw)}), {tree: pairs}
        )
        data = bytearray(cache.read_bytes())
        data[where] ^= 0x01  # one bit of the last compressed piece, then of the tree itself
        cache.write_bytes(bytes(data))
        asked.clear()
        assert reader().known == {}  # a damaged cache is not used at all: the tree comes from git
        assert asked == [tree]


@pytest.mark.parametrize(
    "case",
    ["filter attribute", "crlf content", "executable", "symlink", "include in config", "odd name"],
)
def test_unusual_cases_take_gits_path_and_stay_exact(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    ws.remember("First.")
    rel = "memories/unusual.md"
    _write(ws.root, rel, "plain\n")
    if case == "filter attribute":
        # A clean filter that upper-cases: git stores what the filter gives, never the file's bytes.
        git(ws.root, "config", "filter.shout.clean", "tr a-z A-Z")
        (ws.root / ".git" / "info").mkdir(exist_ok=True)
        (ws.root / ".git" / "info" / "attributes").write_text("*.md filter=shout\n")
    elif case == "crlf content":
        git(ws.root, "config", "core.autocrlf", "true")
        (ws.root / rel).write_bytes(b"windows\r\nline endings\r\n")
    elif case == "executable":
        (ws.root / rel).chmod(0o755)
    elif case == "symlink":
        (ws.root / rel).unlink()
        (ws.root / rel).symlink_to("target.md")
    elif case == "include in config":
        other = ws.root.parent / "included.gitconfig"
        other.write_text("[core]\n\tautocrlf = true\n")
        git(ws.root, "config", "include.path", str(other))
    else:
        (ws.root / rel).unlink()
        rel = "memories/with space.md"
        _write(ws.root, rel, "plain\n")
    _commit(ws.git, ws.root, [rel], f"unusual: {case}\n", fast=False)
    if case == "filter attribute":
        assert git(ws.root, "show", f"HEAD:{rel}") == "PLAIN\n"
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=ws.root, check=True, capture_output=True)


def test_a_user_commit_in_between_takes_gits_path_once(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    ws, _ = Workspace.init(root)
    ws.remember("First.")
    _write(root, "app.txt", "user's work\n")
    git(root, "add", "app.txt")
    git(root, "commit", "-qm", "user's commit")
    _write(root, "memories/one.md", "one\n")
    _commit(ws.git, root, ["memories/one.md"], "after the user's commit\n", fast=False)
    _write(root, "memories/two.md", "two\n")
    _commit(ws.git, root, ["memories/two.md"], "on ee's own commit again\n", fast=True)


def test_a_failed_commit_leaves_gits_index_as_it_was(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index update runs alongside the trees and the commit; when the commit fails, it is undone."""
    ws.remember("First.")
    _write(ws.root, "memories/doomed.md", "doomed\n")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "not a date at all")  # commit-tree refuses it
    head = git(ws.root, "rev-parse", "HEAD").strip()
    with pytest.raises(Exception, match="commit-tree"):
        ws.git.commit_paths(["memories/doomed.md"], "doomed\n")
    assert git(ws.root, "rev-parse", "HEAD").strip() == head
    assert git(ws.root, "ls-files", "--stage", "memories/doomed.md") == ""
    assert git(ws.root, "status", "--porcelain") == "?? memories/doomed.md\n"


IDENTITIES = {
    "environment": ({}, {}, True),
    "at-seconds date": (
        {"GIT_AUTHOR_DATE": "@1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 -0000"},
        {},
        True,
    ),
    "iso date": ({"GIT_AUTHOR_DATE": "2023-11-14T22:13:20Z"}, {}, False),
    "repository config": (
        {
            "GIT_AUTHOR_NAME": None,
            "GIT_AUTHOR_EMAIL": None,
            "GIT_COMMITTER_NAME": None,
            "GIT_COMMITTER_EMAIL": None,
        },
        {"local": "[user]\n\tname = Repo Person\n\temail = repo@example.com\n"},
        True,
    ),
    "global config": (
        {
            "GIT_AUTHOR_NAME": None,
            "GIT_AUTHOR_EMAIL": None,
            "GIT_COMMITTER_NAME": None,
            "GIT_COMMITTER_EMAIL": None,
        },
        {
            "global": "[user]\n    name = Global Person\n    email = global@example.com\n",
            "local": '[remote "origin"]\n\turl = /x\n[User]\n\tName = José Müller\n',
        },
        True,
    ),
    "author config": (
        {"GIT_AUTHOR_NAME": None, "GIT_AUTHOR_EMAIL": None},
        {"global": "[user]\n\tname = Global Person\n\temail = global@example.com\n[author]\n\tname = Au\n"},
        False,
    ),
    "quoted value": (
        {"GIT_AUTHOR_NAME": None},
        {"local": '[user]\n\tname = "Quoted Person"\n'},
        False,
    ),
    "name git trims": ({"GIT_AUTHOR_NAME": "Person Jr."}, {}, False),
    "signing setting": ({}, {"local": "[commit]\n\tgpgsign = false\n"}, False),
    "key on the header line": (
        {"GIT_AUTHOR_NAME": None},
        {"global": "[user]\n\tname = Global Person\n", "local": "[user] name = Local Person\n"},
        False,
    ),
}


@pytest.mark.parametrize("case", list(IDENTITIES))
def test_the_commit_object_is_gits_for_every_identity_source(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    env, files, own = IDENTITIES[case]
    ws.remember("First.")
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    if "global" in files:
        Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(files["global"], encoding="utf-8")
    if "local" in files:
        with open(ws.git.git_dir / "config", "a", encoding="utf-8") as handle:
            handle.write(files["local"])
    _write(ws.root, "memories/who.md", f"made with {case}\n")
    made = _commit(ws.git, ws.root, ["memories/who.md"], f"identity: {case}\n", fast=True, own_commit=own)
    if case == "global config":
        shown = git(ws.root, "log", "-1", "--format=%an <%ae>|%cn <%ce>", made).strip()
        assert shown == "José Müller <global@example.com>|José Müller <global@example.com>"
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=ws.root, check=True, capture_output=True)


def test_the_date_now_is_gits_in_the_local_time_zone(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DATES:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TZ", "America/St_Johns")  # -0330 or -0230: minutes too
    try:
        _check_now(ws, monkeypatch)
    finally:
        monkeypatch.undo()
        time.tzset()  # this process's local time as it was


def _check_now(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.remember("First.")
    _write(ws.root, "memories/now.md", "now\n")
    before = int(time.time())
    parent = git(ws.root, "rev-parse", "HEAD").strip()
    commands = _commands(ws.root, lambda: ws.git.commit_paths(["memories/now.md"], "now\n"))
    assert "commit-tree" not in commands
    made = git(ws.root, "rev-parse", "HEAD").strip()
    dates = git(ws.root, "log", "-1", "--format=%ad|%cd", "--date=raw", made).strip().split("|")
    assert before <= int(dates[1].split()[0]) <= before + 60
    assert dates[0] == dates[1]  # git takes "now" once for both
    zone = git(ws.root, "var", "GIT_COMMITTER_IDENT").split()[-1]  # git's own idea of the zone now
    assert dates[0].split()[1] == dates[1].split()[1] == zone
    assert zone in ("-0330", "-0230")
    monkeypatch.setenv("GIT_AUTHOR_DATE", dates[0])
    monkeypatch.setenv("GIT_COMMITTER_DATE", dates[1])
    assert made == _gits_commit(ws.root, parent, ["memories/now.md"], "now\n")


def test_a_path_beyond_a_symlinked_folder_is_refused_as_git_refuses_it(ws: Workspace) -> None:
    ws.remember("First.")
    elsewhere = ws.root.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("outside\n")
    (ws.root / "memories" / "linked").symlink_to(elsewhere)
    head = git(ws.root, "rev-parse", "HEAD").strip()
    with pytest.raises(GitError, match="symbolic link"):
        ws.git.commit_paths(["memories/linked/x.md"], "beyond a symlink\n")
    assert git(ws.root, "rev-parse", "HEAD").strip() == head


def test_a_commit_that_changes_nothing_returns_head_and_leaves_gits_index_clean(ws: Workspace) -> None:
    """git's index update starts before ee knows the tree is unchanged: it is awaited, and holds HEAD's
    own version."""
    memory = ws.remember("Unchanged.")
    head = git(ws.root, "rev-parse", "HEAD").strip()
    assert ws.git.commit_paths([memory.path], "nothing\n") == head
    assert git(ws.root, "rev-parse", "HEAD").strip() == head
    assert git(ws.root, "status", "--porcelain") == ""
    assert not (ws.git.git_dir / "index.lock").exists()
    ws.remember("Still commits in-process after it.")
    assert git(ws.root, "rev-list", "--count", "HEAD").strip() == str(
        int(git(ws.root, "rev-list", "--count", head).strip()) + 1
    )


def test_a_commit_runs_gits_auto_maintenance_once_loose_objects_pile_up(ws: Workspace) -> None:
    """As ``git commit`` does: with more loose objects than gc.auto allows, ee's commit runs
    ``git gc --auto``, which packs them (in the foreground here: gc.autoDetach false)."""
    from ee.gitobjects import object_id, write

    ws.remember("First.")
    git(ws.root, "config", "gc.autoDetach", "false")
    git(ws.root, "config", "gc.auto", "6700")
    # 7,200 loose objects, reachable (a tree of them on a side branch), as many remembers leave them
    blobs = {object_id(b"blob", data): data for data in (b"loose object %d\n" % n for n in range(7200))}
    write(ws.git.git_dir, blobs, b"blob")
    raw = b"".join(b"100644 f%05d\x00" % n + bytes.fromhex(sha) for n, sha in enumerate(blobs))
    tree = object_id(b"tree", raw)
    write(ws.git.git_dir, {tree: raw}, b"tree")
    commit = (
        b"tree %s\nauthor A <a@example.com> 0 +0000\ncommitter A <a@example.com> 0 +0000\n\nside\n"
        % tree.encode()
    )
    write(ws.git.git_dir, {object_id(b"commit", commit): commit}, b"commit")
    git(ws.root, "update-ref", "refs/heads/side", object_id(b"commit", commit))

    def loose() -> int:
        counts = dict(line.split(": ") for line in git(ws.root, "count-objects", "-v").splitlines())
        return int(counts["count"])

    assert loose() > 7200
    ws.remember("Second: its commit packs them.")
    assert loose() < 100
    assert git(ws.root, "status", "--porcelain") == ""
    assert git(ws.root, "log", "-1", "--format=%s").strip() == "ee: remember Second: its commit packs them."
    git(ws.root, "config", "gc.auto", "0")  # 0: never, whatever the count
    again = {object_id(b"blob", data + b"again"): data + b"again" for data in blobs.values()}
    write(ws.git.git_dir, again, b"blob")
    ws.remember("Third.")
    assert loose() > 7200
