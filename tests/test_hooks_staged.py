"""The hooks' fast paths: one ``git diff`` for the staged paths and lines, the hook table's glob lookup, and
when the table counts as current. Real git repositories and real index files; no hook process here (the
hooks themselves are driven through git in tests/test_hooks.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ee.hooks import gitinfo, run
from ee.index.view import Hold, open_index
from ee.ops import risks
from ee.workspace import Workspace
from tests.conftest import git, make_repo


def table_of(repo: Path, generation: str | None = None) -> risks.Table:
    """The hook table, its index opened as a hook without the server opens it (when it must catch up)."""
    from ee.hooks.refresh import index_at

    return risks.current_table(repo, lambda: index_at(repo), generation)


def stage(repo: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git(repo, "add", "-A")


def name_only(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "diff", "--cached", "--name-only", "--no-renames", "-z"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def test_one_diff_gives_the_paths_and_the_added_lines(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"src/app.py": "def main():\n    return 1\n", "old.txt": "bye\n", "moved.txt": "same text\n"},
    )
    git(repo, "rm", "-q", "old.txt")
    git(repo, "mv", "moved.txt", "renamed.txt")
    stage(
        repo,
        {
            "src/app.py": b"def main():\n    return retry_upload(2)\n",
            "dir with space/ä file.py": b"++plus_line()\nnew_name = 1\n",
            "data.bin": b"\x00\x01binary\x00",
            "memories/note.md": b"---\nkind: note\n---\nsecret_words_of_the_memory\n",
            'memories/é "q".md': b"accented_memory_words\n",  # a name git quotes
        },
    )
    git(repo, "config", "diff.noprefix", "true")  # no a/ b/ in the user's diffs: not in ours
    paths, added = gitinfo.StagedChange(repo, exclude=["memories"]).read()
    assert paths == name_only(repo)  # as `git diff --name-only`: a rename is both paths, names unquoted
    assert "dir with space/ä file.py" in paths
    assert {"old.txt", "moved.txt", "renamed.txt", "data.bin", "memories/note.md"} <= set(paths)
    lines = added.splitlines()
    assert "    return retry_upload(2)" in lines
    assert "++plus_line()" in lines  # an added line starting with "++" is a line, not a header
    assert "new_name = 1" in lines
    assert "secret_words_of_the_memory" not in added  # the memory folder is left out of the lines only
    assert "accented_memory_words" not in added
    assert not any(line.startswith(("+++", "---", "diff --git")) for line in lines)
    assert gitinfo.StagedChange(make_repo(tmp_path / "clean", {"a": "a\n"})).read() == ([], "")


def test_a_huge_change_keeps_every_path_and_caps_the_lines(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    big = "".join(f"line_{i} = {i}\n" for i in range(gitinfo.MAX_DIFF_BYTES // 8))
    files = {"a/big.py": big.encode()}
    files |= {f"z/{i:04d}.txt": f"after {i}\n".encode() for i in range(300)}
    stage(repo, files)
    paths, added = gitinfo.StagedChange(repo).read()
    assert paths == name_only(repo)
    assert len(paths) == 301
    assert len(added.encode()) <= gitinfo.MAX_DIFF_BYTES
    assert added.startswith("line_0 = 0\n")


MEMORY = "---\nid: {id}\nkind: {kind}\npaths: [{paths}]\n---\n{body}\n"


def workspace(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    memories = {
        "a": ("anti-pattern", "src/api/**, db/*.sql", "Never skip the API review."),
        "b": ("convention", "src/api/**", "API handlers return problem+json."),
        "c": ("risk", "src/api/**", "The API gateway caches for an hour."),
        "d": ("failure", "docs", "The docs build broke on a bad link."),
    }
    for name, (kind, paths, body) in memories.items():
        text = MEMORY.format(id=f"mem_{name}", kind=kind, paths=paths, body=body)
        (repo / "memories" / f"{name}.md").write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memories")
    return repo


def test_path_findings_through_the_glob_lookup(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    table = table_of(repo)
    assert sorted(table.data["globs"]) == ["db/*.sql", "docs", "src/api/**"]
    paths = ["db/x.sql", "docs/index.md", "src/api/v1.py", "src/other.py"]
    found = {f.entry.id: f.paths for f in table.findings(paths, None, kinds=None)}
    assert found == {
        "mem_a": ("db/x.sql", "src/api/v1.py"),  # in the order of the staged paths, each once
        "mem_b": ("src/api/v1.py",),
        "mem_c": ("src/api/v1.py",),
        "mem_d": ("docs/index.md",),
    }
    risky = [f.entry.id for f in table.findings(paths, None)]
    assert risky == ["mem_a", "mem_c", "mem_d"]  # the convention is not a risk


def test_a_memory_citing_lines_of_a_file_is_about_that_file(tmp_path: Path) -> None:
    """A ``paths`` entry citing lines (``src/app.py:10-20``, as ee.curate.citations reads it) named no
    staged path: neither pre-commit nor the commit template found the memory."""
    repo = workspace(tmp_path)
    (repo / "memories/e.md").write_text(
        MEMORY.format(id="mem_e", kind="failure", paths="'src/app.py:10-20', 'lib/x.py:L3'", body="Keep it."),
        encoding="utf-8",
    )
    table = table_of(repo)
    assert [f.entry.id for f in table.findings(["src/app.py"], None)] == ["mem_e"]
    assert [f.entry.id for f in table.findings(["lib/x.py"], None)] == ["mem_e"]
    assert table.findings(["src/app.pyc", "src/app.py:10-20/x"], None) == []
    assert table.findings(["README.md"], None, kinds=None) == []


def test_the_table_follows_the_files_and_is_relabelled_not_rebuilt(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    built = table_of(repo).data
    (repo / "notes.txt").write_text("code, not memories\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "HEAD moves, the memories do not")
    view = open_index(Workspace(repo))
    moved = view.manifest["generation"]
    assert moved != built["generation"]
    # Checked against that view: the stat finds the same files, so the table is relabelled with the
    # view's generation, and later checks against it need no stat.
    table_of(repo, moved)
    saved = risks.load_table(repo)
    assert saved is not None
    assert (saved["generation"], saved["digest"], saved["rows"]) == (moved, built["digest"], built["rows"])
    # A memory file written since: no generation vouches for the table, the stat sees it, it is rebuilt.
    (repo / "memories/e.md").write_text(
        MEMORY.format(id="mem_e", kind="anti-pattern", paths="lib/**", body="Never vendor lib."),
        encoding="utf-8",
    )
    table = table_of(repo, "gen-from-another-view")
    assert [f.entry.id for f in table.findings(["lib/x.c"], None)] == ["mem_e"]


def test_the_settings_a_hook_reads(tmp_path: Path) -> None:
    """A hook reads its settings through ee.config: the defaults with no file or the file ee init writes,
    and what the file sets."""
    from ee.config import DEFAULT_CONFIG_TEXT, Config
    from ee.hooks import run

    keys = ("hooks.block", "redaction.allow_bypass", "query.min_relevance")
    defaults = {key: Config().get(key) for key in keys}
    assert defaults == {"hooks.block": False, "redaction.allow_bypass": False, "query.min_relevance": 0.8}
    root = tmp_path / "ws"
    hook = run.Hook("pre-commit", [], str(root), str(root), warm=False)
    assert {key: hook.setting(key) for key in keys} == defaults  # no file
    (root / ".ee").mkdir(parents=True)
    (root / ".ee/config.toml").write_text(DEFAULT_CONFIG_TEXT, encoding="utf-8")
    assert {key: hook.setting(key) for key in keys} == defaults
    (root / ".ee/config.toml").write_text("[hooks]  # mine\nblock = true\n", encoding="utf-8")
    assert hook.setting("hooks.block") is True


def test_a_submodule_shown_as_a_diff_does_not_shift_the_files(tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "sub", {"f.txt": "inner line\n", "g.txt": "other inner line\n"})
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(repo, "config", "diff.submodule", "diff")  # would print the submodule's own `diff --git` sections
    stage(repo, {"tmem/m.md": b"memory_words\n", "z.py": b"zeta_line = 1\n"})
    paths, added = gitinfo.StagedChange(repo, exclude=["tmem"]).read()
    assert paths == [".gitmodules", "sub", "tmem/m.md", "z.py"]
    assert "zeta_line = 1" in added.splitlines()
    assert "memory_words" not in added  # each section still belongs to its own path
    assert "inner line" not in added  # the submodule is one line (its commit), not its files


def test_an_unmerged_path_has_no_section_of_its_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "base\n"})
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "a.txt").write_text("topic\n", encoding="utf-8")
    git(repo, "commit", "-qam", "topic")
    git(repo, "checkout", "-q", "-")
    (repo / "a.txt").write_text("main\n", encoding="utf-8")
    git(repo, "commit", "-qam", "main")
    merge = subprocess.run(["git", "merge", "topic"], cwd=repo, capture_output=True, check=False)
    assert merge.returncode != 0  # a conflict in a.txt
    (repo / "memories").mkdir()
    (repo / "memories/m.md").write_text("memory_words\n", encoding="utf-8")
    (repo / "z.py").write_text("zeta_line = 1\n", encoding="utf-8")
    git(repo, "add", "memories", "z.py")  # a.txt stays unmerged
    paths, added = gitinfo.StagedChange(repo, exclude=["memories"]).read()
    assert paths == ["a.txt", "memories/m.md", "z.py"]
    assert added.splitlines() == ["zeta_line = 1"]


def test_a_type_change_has_two_sections(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "was a file\n", "b.txt": "target\n"})
    (repo / "a.txt").unlink()
    (repo / "a.txt").symlink_to("b.txt")  # git shows it as a deletion and a creation
    stage(repo, {"memories/m.md": b"memory_words\n", "z.py": b"zeta_line = 1\n"})
    paths, added = gitinfo.StagedChange(repo, exclude=["memories"]).read()
    assert paths == ["a.txt", "memories/m.md", "z.py"]
    assert added.splitlines() == ["b.txt", "zeta_line = 1"]  # the link's target is its added line


def test_the_hook_check_answers_as_the_hook_does_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Workspace.hook_check`` (the ``hook_check`` operation the user's server answers for a warm hook)
    finds the warnings, exit code and message memories the hook's own in-process run finds for the same
    change."""
    repo = workspace(tmp_path)
    (repo / "memories/e.md").write_text(
        "---\nid: mem_e\nkind: failure\ntags: [block]\n---\nThe flaky_upload_retry broke the "
        "storage_quota_guard and the nightly_backfill_window.\n",
        encoding="utf-8",
    )
    git(repo, "add", "memories/e.md")  # a person's commit: only a person's memory blocks (issue 31)
    git(repo, "commit", "-q", "--no-verify", "-m", "a failure memory")
    open_index(Workspace(repo))
    root = str(repo)
    # (the server's own Workspace of the folder, which keeps its view between requests)
    served_ws = Workspace(repo)
    served_ws.index_hold = Hold(lambda: 0)
    changes = {
        "warns": (["db/x.sql", "src/api/v1.py"], "SELECT 1;\n"),
        "blocks": (["lib/job.py"], "flaky_upload_retry(storage_quota_guard, nightly_backfill_window)\n"),
        "nothing": (["README.md"], "hello\n"),
    }
    codes = {}
    for label, (paths, added) in changes.items():
        code = run.check_change(run.Hook("pre-commit", [], root, root, warm=False), paths, added)
        in_process = capsys.readouterr().err
        served = served_ws.hook_check("pre-commit", paths, added)
        assert capsys.readouterr().err == ""  # the server prints nothing: it sends it back
        served_code = run.BLOCKED if served.blocked else 0
        assert (served_code, "".join(f"{line}\n" for line in served.said)) == (code, in_process), label
        codes[label] = code
        expected = run.message_memories(
            run.Hook("prepare-commit-msg", [], root, root, warm=False), paths, added
        )
        message = served_ws.hook_check("prepare-commit-msg", paths, added)
        assert not message.blocked
        assert not message.said
        assert [tuple(pair) for pair in message.memories] == expected, label
    assert codes == {"warns": 0, "blocks": run.BLOCKED, "nothing": 0}
    # it ran over the view the server keeps for the workspace, not over one of its own
    assert served_ws.index_hold.view is not None
    served = served_ws.hook_check("pre-commit", *changes["warns"])
    assert any("ee: warning: anti-pattern mem_a" in line for line in served.said)
    assert not any("mem_b" in line for line in served.said)  # a convention: the message's, not a warning
    message = served_ws.hook_check("prepare-commit-msg", *changes["warns"])
    assert list(message.memories[:3]) == [
        ["mem_a", "Never skip the API review."],
        ["mem_b", "API handlers return problem+json."],
        ["mem_c", "The API gateway caches for an hour."],
    ]


def test_a_table_proved_current_by_an_opened_view_is_relabelled(tmp_path: Path) -> None:
    """Without ee watch, prepare-commit-msg opens the index (catching it up) and passes its generation: a
    table whose files are unchanged takes that generation, so the next hook needs no stat of the files."""
    repo = workspace(tmp_path)
    built = table_of(repo).data
    (repo / "notes.txt").write_text("code, not memories\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "HEAD moves, the memories do not")
    moved = open_index(Workspace(repo)).manifest["generation"]
    assert moved != built["generation"]
    table_of(repo, moved)
    saved = risks.load_table(repo)
    assert saved is not None
    assert (saved["generation"], saved["digest"], saved["rows"]) == (moved, built["digest"], built["rows"])
    # A memory file written since: the next hook's view has a new generation, the stat sees the file,
    # and the table is rebuilt.
    (repo / "memories/e.md").write_text(
        MEMORY.format(id="mem_e", kind="anti-pattern", paths="lib/**", body="Never vendor lib."),
        encoding="utf-8",
    )
    again = open_index(Workspace(repo)).manifest["generation"]
    assert again != moved
    table = table_of(repo, again)
    assert [f.entry.id for f in table.findings(["lib/x.py"], None)] == ["mem_e"]
    assert table.data["digest"] != built["digest"]


def test_a_loaded_table_is_decoded_again_only_once_replaced(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    first = table_of(repo).data
    loaded = risks.load_table(repo)
    assert loaded is not None
    assert risks.load_table(repo) is loaded  # the same file: not decoded again (ee watch's server)
    relabelled = risks.relabelled(loaded, "gen-other")
    risks.save_table(repo, relabelled)
    assert risks.load_table(repo) is relabelled  # what this process saved: not decoded again either
    risks.save_table(repo, relabelled | {"generation": "gen-third"})
    risks._LOADED.clear()  # as in another process: the file is decoded
    again = risks.load_table(repo)
    assert again is not None
    assert again is not loaded
    assert (again["generation"], again["rows"]) == ("gen-third", first["rows"])
    (repo / ".ee/hooks/table.marshal").write_bytes(b"torn")
    assert risks.load_table(repo) is None


def test_the_commit_message_names_memories_never_session_evidence(tmp_path: Path) -> None:
    """The message's search is ``Workspace.search`` (as the server's ``search`` answers a warm hook), which
    merges session evidence: the message keeps the memories only, warm or cold alike."""
    repo = workspace(tmp_path)
    transcript = tmp_path / "transcripts" / "claude-code.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes((Path(__file__).parent / "fixtures/transcripts/claude-code.jsonl").read_bytes())
    ws = Workspace(repo)
    ws.import_sessions([transcript])
    hook = run.Hook("prepare-commit-msg", [], str(repo), str(repo), warm=False)
    found = run.search_here(hook, "alembic migrations", run.MESSAGE_HITS)
    assert any(hit.type == "evidence" for hit in found.hits)  # (so the case is real)
    chosen = run.message_memories(hook, ["db/alembic_migrations.sql"], "alembic migrations\n")
    assert chosen
    assert all(memory_id.startswith("mem_") for memory_id, _title in chosen)


def commit(repo: Path, *subjects: str) -> None:
    for subject in subjects:
        with (repo / "log.txt").open("a", encoding="utf-8") as file:
            file.write(subject + "\n")
        git(repo, "add", "log.txt")
        git(repo, "commit", "-q", "-m", subject)


def test_a_branch_task_holds_only_the_commits_the_default_branch_does_not(tmp_path: Path) -> None:
    """QA finding 12: ``.ee/context.md`` on a branch just made described main's last commits."""
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    commit(repo, "speed up the parser", "ee: remember something", "fix the lexer")
    assert gitinfo.branch_task(repo) == "main; fix the lexer; speed up the parser; initial"  # as before
    git(repo, "checkout", "-q", "-b", "fix/upload-retry")
    assert gitinfo.branch_task(repo) == "fix upload retry"  # nothing of its own yet: the name alone
    commit(repo, "retry uploads on 503")
    assert gitinfo.branch_task(repo) == "fix upload retry; retry uploads on 503"
    git(repo, "checkout", "-q", "main")
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "fix/upload-retry")
    assert gitinfo.branch_task(repo) == "fix upload retry; retry uploads on 503"
    # a repository whose default is master
    git(repo, "branch", "-q", "-m", "main", "master")
    assert gitinfo.branch_task(repo) == "fix upload retry; retry uploads on 503"
    git(repo, "checkout", "-q", "--detach", "master")  # a detached HEAD: the last commits, as before
    assert gitinfo.branch_task(repo) == "main moves on; fix the lexer; speed up the parser; initial"


def test_a_clone_takes_its_default_branch_from_the_remote(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin", {"README.md": "x\n"})
    git(origin, "branch", "-q", "-m", "main", "trunk")
    commit(origin, "trunk work")
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    assert gitinfo.default_branch("trunk", clone) == (
        "trunk",
        ["refs/remotes/origin/trunk", "refs/heads/trunk"],
    )
    assert gitinfo.branch_task(clone) == "trunk; trunk work; initial"  # the default branch itself
    git(clone, "checkout", "-q", "-b", "feature/rotate-logs")
    git(clone, "branch", "-q", "-D", "trunk")  # (the remote's branch is enough)
    assert gitinfo.branch_task(clone) == "feature rotate logs"
    commit(clone, "rotate by inode")
    assert gitinfo.branch_task(clone) == "feature rotate logs; rotate by inode"
    git(clone, "branch", "-q", "-m", "feature/rotate-logs", "main")  # a local main the remote does not name
    assert gitinfo.branch_task(clone) == "main; rotate by inode"
