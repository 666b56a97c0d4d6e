"""Git hooks and agent hooks, driven through real git: hooks run as git runs them, in temporary repos."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ee.hooks.agents import PACK
from ee.hooks.tasks import task_from_input
from ee.install import ee_command
from ee.ops.risks import path_matches
from ee.workspace import Workspace
from tests.conftest import git, make_repo, run_cli

BIN = str(Path(sys.executable).parent)
HOOKS = (
    "post-checkout",
    "post-merge",
    "prepare-commit-msg",
    "commit-msg",
    "pre-commit",
    "post-commit",
    "post-rewrite",
)
ANTI_PATTERN = """\
---
id: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB
kind: anti-pattern
tags: [db]
paths: [db/migrations/*.sql]
---
Never run schema migrations outside a transaction: a half-applied migration broke prod.
"""


@pytest.fixture(autouse=True)
def _path_has_ee(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    for var in ("EE_HOOK_EE", "EE_HOOK_TIMEOUT", "EE_HOOK_NO_TIMEOUT_CMD", "EE_HOOKS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EE_HOOK_TIMEOUT", "30")  # a loaded CI machine: the limit is tested on its own


def run_git(
    repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        input=stdin,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=120,
    )


def write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def user_hook(folder: Path, name: str, body: str) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    data = f"#!/bin/sh\n{body}\n".encode()
    (folder / name).write_bytes(data)
    (folder / name).chmod(0o755)
    return data


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir() if p.is_file()}


def hooked(tmp_path: Path, memories: dict[str, str] | None = None) -> Path:
    """A repository that is an ee workspace holding ``memories``, with ee's hooks installed."""
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    Workspace.init(repo)
    for rel, text in (memories or {}).items():
        write(repo, rel, text)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "--no-verify", "-m", "memories")
    result = run_cli("hooks", "install", "--json", cwd=repo)
    assert result.code == 0, result.err
    return repo


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    """Poll for the result of the post-* hooks' background job."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def stage(repo: Path, rel: str, text: str) -> None:
    write(repo, rel, text)
    git(repo, "add", rel)


# ------------------------------------------------------------------------------------------ install


def test_install_chains_an_existing_hook_and_both_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    original = user_hook(repo / ".git/hooks", "pre-commit", 'echo "user hook ran" >&2')
    data = run_cli("hooks", "install", "--json", cwd=repo).data
    assert {h["name"]: h["action"] for h in data["hooks"]}["pre-commit"] == "chained"
    assert (repo / ".git/hooks/pre-commit.ee-chained").read_bytes() == original
    write(repo, "memories/mig.md", ANTI_PATTERN)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "memory")
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t ADD c int;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert proc.returncode == 0, proc.stderr
    assert "user hook ran" in proc.stderr
    assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
    assert proc.stderr.index("user hook ran") < proc.stderr.index("ee: warning")


def test_a_failing_user_hook_still_stops_the_commit_and_ee_is_not_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    user_hook(repo / ".git/hooks", "pre-commit", 'echo "no commits today" >&2; exit 3')
    run_cli("hooks", "install", cwd=repo)
    stage(repo, "a.txt", "a\n")
    proc = run_git(repo, "commit", "-m", "a", env={"EE_HOOK_EE": "/nonexistent/ee"})
    assert proc.returncode != 0
    assert "no commits today" in proc.stderr
    assert "ee:" not in proc.stderr  # ee was not even looked for


def test_a_post_hook_keeps_the_user_hooks_exit_status_and_stdin(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    hooks = repo / ".git/hooks"
    user_hook(hooks, "post-checkout", "exit 3")
    user_hook(hooks, "post-rewrite", f'cat > "{tmp_path}/rewritten"; echo "$1" >> "{tmp_path}/rewritten"')
    without_ee = run_git(repo, "checkout", "-q", "-b", "before").returncode
    run_cli("hooks", "install", cwd=repo)
    assert run_git(repo, "checkout", "-q", "-b", "topic").returncode == without_ee != 0  # the hook's failure
    old = git(repo, "rev-parse", "HEAD").strip()
    assert run_git(repo, "commit", "-q", "--amend", "-m", "amended").returncode == 0
    new = git(repo, "rev-parse", "HEAD").strip()
    assert (tmp_path / "rewritten").read_text() == f"{old} {new}\namend\n"


def test_install_honours_core_hooks_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    git(repo, "config", "core.hooksPath", ".githooks")
    original = user_hook(repo / ".githooks", "post-commit", f'touch "{tmp_path}/user-post-commit"')
    data = run_cli("hooks", "install", "--json", cwd=repo).data
    assert Path(data["hooks_dir"]) == (repo / ".githooks").resolve()
    assert sorted(p.name for p in (repo / ".git/hooks").iterdir() if not p.name.endswith(".sample")) == []
    assert (repo / ".githooks/post-commit.ee-chained").read_bytes() == original
    stage(repo, "a.txt", "a\n")
    assert run_git(repo, "commit", "-q", "-m", "a").returncode == 0
    assert (tmp_path / "user-post-commit").exists()
    wait_for((repo / ".ee/hooks/refresh.done").exists, "ee's post-commit job")  # ee's post-commit ran too
    assert (repo / ".ee/hooks/table.marshal").exists()
    assert (repo / ".ee/hooks/refresh.log").read_text() == ""  # the job's output: nothing went wrong


def test_install_is_idempotent_and_uninstall_restores_the_original_bytes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    hooks = repo / ".git/hooks"
    user_hook(hooks, "pre-commit", "exit 0")
    (hooks / "post-merge").write_bytes(b"#!/bin/sh\r\n# odd bytes \xff kept\r\n")
    (hooks / "post-merge").chmod(0o700)
    before = snapshot(hooks)
    first = run_cli("hooks", "install", "--json", cwd=repo).data
    installed = snapshot(hooks)
    second = run_cli("hooks", "install", "--json", cwd=repo).data
    assert first["changed"] is True
    assert second["changed"] is False
    assert {h["action"] for h in second["hooks"]} == {"unchanged"}
    assert snapshot(hooks) == installed
    states = {h["name"]: h["state"] for h in run_cli("hooks", "status", "--json", cwd=repo).data["hooks"]}
    assert states == {
        name: "chained" if name in ("pre-commit", "post-merge") else "installed" for name in HOOKS
    }
    removed = run_cli("hooks", "uninstall", "--json", cwd=repo).data
    assert removed["changed"] is True
    assert snapshot(hooks) == before
    assert run_cli("hooks", "uninstall", "--json", cwd=repo).data["changed"] is False


def test_status_reports_missing_and_foreign_hooks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    user_hook(repo / ".git/hooks", "pre-commit", "exit 0")
    states = {h["name"]: h["state"] for h in run_cli("hooks", "status", "--json", cwd=repo).data["hooks"]}
    assert states["pre-commit"] == "foreign"
    assert states["post-commit"] == "missing"
    human = run_cli("hooks", "status", "--human", cwd=repo).out
    assert "pre-commit" in human
    assert "foreign" in human


# ------------------------------------------------------------------------------------------ pre-commit


def test_a_commit_touching_an_anti_pattern_path_warns(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t ADD c int;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert proc.returncode == 0, proc.stderr
    assert (
        'ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB "Never run schema migrations outside a '
        "transaction"
    ) in proc.stderr
    assert "db/migrations/001.sql" in proc.stderr
    assert "memories/mig.md" in proc.stderr


def test_a_memory_written_since_the_last_check_is_seen(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    stage(repo, "a.txt", "a\n")
    assert run_git(repo, "commit", "-q", "-m", "a").returncode == 0  # builds the hook table
    write(repo, "memories/mig.md", ANTI_PATTERN)  # not committed, not staged: the working tree counts
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr


def test_a_blocking_memory_stops_the_commit(tmp_path: Path) -> None:
    blocking = ANTI_PATTERN.replace("tags: [db]", "tags: [db, block]")
    repo = hooked(tmp_path, {"memories/mig.md": blocking})
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t ADD c int;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert proc.returncode != 0
    assert "ee: blocked: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
    assert "ee: commit blocked (its tags or frontmatter say block)" in proc.stderr
    assert "git commit --no-verify" in proc.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "memories"


def test_config_block_true_blocks_every_warning(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    write(repo, ".ee/config.toml", "[hooks]\nblock = true\n")
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t ADD c int;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert proc.returncode != 0
    assert "[hooks] block = true" in proc.stderr


def test_added_lines_that_match_a_failure_memory_warn(tmp_path: Path) -> None:
    failure = (
        "---\nid: mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA\nkind: failure\n---\n"
        "`retry_upload` with `backoff_jitter` disabled hammered the storage API during the outage.\n"
    )
    filler = {
        f"memories/note-{i}.md": f"Note {i}: the release train leaves on Tuesdays, topic {i}.\n"
        for i in range(5)
    }
    repo = hooked(tmp_path, {"memories/upload.md": failure, **filler})
    stage(
        repo, "src/upload.py", "def go():\n    retry_upload(backoff_jitter=False)  # hammer the storage API\n"
    )
    proc = run_git(repo, "commit", "-m", "upload")
    assert proc.returncode == 0, proc.stderr
    assert "ee: warning: failure mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA" in proc.stderr
    assert "the added lines match its words" in proc.stderr


def test_a_memory_file_holding_an_api_key_is_refused(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    key = "AKIA" + "Q7XK2M4N6P8R3T5V"
    stage(repo, "memories/deploy.md", f"Deploy with the CI user.\naws_access_key_id = {key}\n")
    proc = run_git(repo, "commit", "-m", "deploy note")
    assert proc.returncode != 0
    assert "ee: refusing to commit memories/deploy.md: it holds a secret (" in proc.stderr
    assert "line 2" in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_an_events_file_holding_a_token_is_refused(tmp_path: Path) -> None:
    # A hand edit of an outcome's reason (ee outcome itself refuses one) must not reach git either.
    repo = hooked(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    token = "ghp_" + "R8f2kQ9vLx3mZp7Wt1Yc5Nb0Hs4Jd6Ga2Ue8"
    event = {"id": "evt_1", "memory": "m1", "signal": "helpful", "at": "2026-12-01T00:00:00Z"}
    stage(repo, "memories/.events/m1.jsonl", json.dumps({**event, "reason": f"used {token}"}) + "\n")
    proc = run_git(repo, "commit", "-m", "feedback")
    assert proc.returncode != 0
    assert "ee: refusing to commit memories/.events/m1.jsonl: it holds a secret (github_token" in proc.stderr
    assert token not in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_memory_file_named_with_a_newline_is_still_checked(tmp_path: Path) -> None:
    """git reads one name a line in ``cat-file --batch``: a newline in a file's name must not let the
    file (or the staged files after it) skip the secret check."""
    repo = hooked(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    key = "AKIA" + "Q7XK2M4N6P8R3T5V"
    stage(repo, "memories/a\nb.md", f"aws_access_key_id = {key}\n")
    stage(repo, "memories/z.md", f"aws_access_key_id = {key}\n")
    proc = run_git(repo, "commit", "-m", "deploy note")
    assert proc.returncode != 0
    assert "ee: refusing to commit memories/a\nb.md: it holds a secret (" in proc.stderr
    assert "ee: refusing to commit memories/z.md: it holds a secret (" in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_memory_file_named_with_a_token_is_refused_with_a_rename_that_works(tmp_path: Path) -> None:
    """The name is printed masked, so the repair is a rename whose ``?`` wildcards find the file."""
    repo = hooked(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    token = "ghp_" + "iK2ZWeqhFWCEPyYngFb51yBMWXaSCrUZoL8g"
    stage(repo, f"memories/{token}.md", "Deploy notes.\n")
    proc = run_git(repo, "commit", "-m", "notes")
    assert proc.returncode != 0
    assert token not in proc.stderr
    assert "it holds a secret (github_token" in proc.stderr
    rename = proc.stderr.split("Rename it (", 1)[1].split(")", 1)[0]
    assert rename.startswith("git mv memories/ghp_")
    assert "?" in rename  # the secret's characters are wildcards
    assert git(repo, "rev-parse", "HEAD") == head
    subprocess.run(rename, shell=True, cwd=repo, check=True)  # the printed command, as a user runs it
    proc = run_git(repo, "commit", "-m", "notes")
    assert proc.returncode == 0, proc.stderr
    assert token not in git(repo, "log", "-1", "--name-only", "--format=")


def test_a_broken_config_lets_the_commit_through_with_a_notice(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN.replace("tags: [db]", "tags: [block]")})
    write(repo, ".ee/config.toml", "[hooks\nblock = = true\n")
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert proc.returncode == 0, proc.stderr
    notices = [line for line in proc.stderr.splitlines() if line.startswith("ee: hook skipped (pre-commit")]
    assert len(notices) == 1
    assert ".ee/config.toml" in notices[0]


@pytest.mark.parametrize("fallback", [False, True], ids=["timeout", "background-kill"])
def test_a_slow_or_missing_ee_fails_open_but_not_for_the_secret_check(tmp_path: Path, fallback: bool) -> None:
    """A checkout goes on without a slow or missing ee; a commit does not: pre-commit's secret check fails
    closed (issue 31), naming the escape."""
    repo = hooked(tmp_path)
    slow = tmp_path / "slow-ee"
    slow.write_text("#!/bin/sh\nexec sleep 20\n")  # the background kill stops the process itself
    slow.chmod(0o755)
    env = {
        "EE_HOOK_EE": str(slow),
        "EE_HOOK_TIMEOUT": "0.5",
        "EE_HOOK_NO_TIMEOUT_CMD": "1" if fallback else "",
        "EE_PRE_COMMIT_LIMIT": "0.5",
    }
    started = time.monotonic()
    proc = run_git(repo, "checkout", "-q", "-b", "feature", env=env)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 15
    assert "ee: hook skipped (post-checkout took over 0.5s" in proc.stderr
    stage(repo, "a.txt", "a\n")
    proc = run_git(repo, "commit", "-m", "a", env=env)
    assert proc.returncode != 0
    assert (
        "ee: commit blocked: ee's check of the staged memory files for secrets could not run (it took "
        "over 0.5s)" in proc.stderr
    )
    assert "git commit --no-verify" in proc.stderr
    missing = {"EE_HOOK_EE": str(tmp_path / "no-such-ee")}
    proc = run_git(repo, "checkout", "-q", "-b", "other", env=missing)
    assert proc.returncode == 0
    assert "ee: hook skipped (post-checkout: ee is not on PATH" in proc.stderr
    proc = run_git(repo, "commit", "-m", "b", env=missing)
    assert proc.returncode != 0
    assert "could not run (ee is not on PATH" in proc.stderr


def test_the_python_hook_keeps_its_own_time_limit(tmp_path: Path) -> None:
    """The hook started with the installing Python (no ``timeout`` process) is ended by its own timer: the
    commit goes on with the notice, without the warning the hook had no time to print."""
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    runner = (repo / ".git/hooks/ee-hook-run").read_text()
    assert "setitimer" in runner
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    proc = run_git(repo, "commit", "-m", "a", env={"EE_HOOK_TIMEOUT": "0.001"})
    assert proc.returncode == 0, proc.stderr
    assert "ee: hook skipped (pre-commit took over 0.001s" in proc.stderr
    assert "ee: warning" not in proc.stderr
    assert run_git(repo, "log", "-1", "--format=%s").stdout.strip() == "a"
    stage(repo, "db/migrations/002.sql", "ALTER TABLE u;\n")
    proc = run_git(repo, "commit", "-m", "b")  # the limit of the test's environment: time enough
    assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
    assert "skipped" not in proc.stderr


def test_the_time_limit_comes_from_the_hooks_table_of_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EE_HOOK_TIMEOUT")
    repo = hooked(tmp_path)
    slow = tmp_path / "slow-ee"
    slow.write_text("#!/bin/sh\nexec sleep 20\n")
    slow.chmod(0o755)
    config = "[store]\ntimeout = 9\n[hooks]  # limits\n  block = false\n\ttimeout\t=  0.5 # s\n"
    write(repo, ".ee/config.toml", config + "[sync]\ntimeout = 7\n")
    proc = run_git(repo, "checkout", "-q", "-b", "a", env={"EE_HOOK_EE": str(slow)})
    assert proc.returncode == 0, proc.stderr
    assert "ee: hook skipped (post-checkout took over 0.5s" in proc.stderr
    write(repo, ".ee/config.toml", "[hooks]\ntimeout = soon\n")  # not a number: the default, 2 s
    proc = run_git(repo, "checkout", "-q", "-b", "b", env={"EE_HOOK_EE": str(slow)})
    assert "ee: hook skipped (post-checkout took over 2s" in proc.stderr


def test_the_runner_takes_its_default_time_limit_from_the_config_module(tmp_path: Path) -> None:
    """The default of [hooks] timeout is ee.config's, written into the runner at install: one value."""
    from ee.config import default

    runner = (hooked(tmp_path) / ".git/hooks/ee-hook-run").read_text()
    assert "@HOOK_TIMEOUT@" not in runner
    assert "@PYTHON@" not in runner
    assert runner.count(f"limit={default('hooks.timeout'):g} ;;") == 2


def test_an_uninstalled_ee_fails_open_but_for_the_secret_check(tmp_path: Path) -> None:
    """The Python that installed the hooks is gone and no ``ee`` is on the PATH git runs hooks with."""
    repo = hooked(tmp_path)
    runner = repo / ".git/hooks/ee-hook-run"
    runner.write_bytes(runner.read_bytes().replace(sys.executable.encode(), b"/nonexistent/python3"))
    stage(repo, "a.txt", "a\n")
    proc = run_git(repo, "commit", "-m", "a", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0  # (the secret check fails closed: issue 31)
    assert "could not run (ee is not on PATH" in proc.stderr
    proc = run_git(repo, "commit", "--no-verify", "-m", "a", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert [line.split(":")[1].split("(")[1] for line in lines] == [
        "prepare-commit-msg",
        "post-commit",
    ]
    assert all(line.startswith("ee: hook skipped (") and "ee is not on PATH" in line for line in lines)


def test_hooks_are_quiet_during_a_rebase(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    assert run_git(repo, "commit", "-q", "--no-verify", "-m", "one").returncode == 0
    proc = run_git(repo, "rebase", "-i", "HEAD~1", env={"GIT_SEQUENCE_EDITOR": "sed -i s/^pick/edit/"})
    assert proc.returncode == 0, proc.stderr
    assert (Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "rebase-merge").is_dir()
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t ADD c int;\n")
    proc = run_git(repo, "commit", "--amend", "-m", "one, amended")
    assert proc.returncode == 0, proc.stderr
    assert "ee:" not in proc.stderr
    assert run_git(repo, "rebase", "--continue").returncode == 0


def test_nothing_happens_outside_an_ee_workspace(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    git(repo, "rm", "-rq", "memories", ".ee/config.toml")
    (repo / ".ee").rename(tmp_path / "moved-state")
    stage(repo, "a.txt", "a\n")
    proc = run_git(repo, "commit", "-m", "a", env={"EE_HOOK_EE": str(tmp_path / "no-such-ee")})
    assert proc.returncode == 0, proc.stderr
    assert "ee" not in proc.stderr


def test_a_workspace_in_a_sub_folder_is_served(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo / "notes")
    write(repo, "notes/memories/mig.md", ANTI_PATTERN)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "memories")
    assert run_cli("hooks", "install", cwd=repo / "notes").code == 0
    assert git(repo, "config", "ee.workspace").strip() == "notes"
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    proc = run_git(repo, "commit", "-m", "migration")
    assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
    run_cli("hooks", "uninstall", cwd=repo / "notes")
    assert run_git(repo, "config", "ee.workspace").returncode != 0


# ------------------------------------------------------------------------------------------ message, checkout


def test_prepare_commit_msg_comments_never_reach_the_commit(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    seen = tmp_path / "seen-message"
    editor = tmp_path / "editor"
    editor.write_text(
        f'#!/bin/sh\ncp "$1" "{seen}"\nprintf "add a migration\\n" | cat - "$1" > "$1.new" && '
        'mv "$1.new" "$1"\n'
    )
    editor.chmod(0o755)
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    proc = run_git(repo, "commit", "-v", env={"GIT_EDITOR": str(editor)})
    assert proc.returncode == 0, proc.stderr
    shown = seen.read_text()
    line = "# ee: Never run schema migrations outside a transaction: a half-applied migration broke prod."
    assert f"{line} (mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB)" in shown
    assert shown.index("# ee:") < shown.index(">8")  # above the scissors line of `git commit -v`
    message = git(repo, "log", "-1", "--format=%B")
    assert message.strip() == "add a migration"
    assert "ee:" not in message


LOGSHIP = {
    "memories/tailer.md": "---\nid: mem_tailer\nkind: fact\ntags: [tailer]\n---\n"
    "Tailer follows a log across rotation by inode: when the inode changes, restart from offset 0.\n",
    "memories/partial.md": "---\nid: mem_partial\nkind: rule\ntags: [tailer]\n---\n"
    "Never ship a partial line from logship: a line without a newline is still being written.\n",
    "memories/release.md": "---\nid: mem_release\nkind: rule\n---\n"
    "Before a release of logship, bump __version__ in src/logship/__init__.py and pyproject.toml.\n",
    "memories/dupes.md": "---\nid: mem_dupes\nkind: failure\npaths: [src/logship/state.py]\n---\n"
    "# Duplicate lines after a restart\n\nlogship saved offsets before the batch was sent.\n",
    "memories/offsets.md": "---\nid: mem_offsets\nkind: fact\n---\n"
    "logship saves offsets with tempfile.mkstemp in src/logship/state.py, then os.replace.\n",
    "memories/token.md": "---\nid: mem_token\nkind: rule\n---\n"
    "The logship collector token comes from LOGSHIP_TOKEN in src/logship/config.py, never from a file.\n",
}


def message_of(tmp_path: Path, repo: Path, rel: str) -> list[str]:
    """The ``# ee:`` lines prepare-commit-msg puts in the message of a commit of a change to ``rel``."""
    seen = tmp_path / "seen-message"
    editor = tmp_path / "editor"
    editor.write_text(f'#!/bin/sh\ncp "$1" "{seen}"\nprintf "change\\n" > "$1"\n')
    editor.chmod(0o755)
    stage(repo, rel, "def follow(path):\n    return open(path)\n")
    proc = run_git(repo, "commit", env={"GIT_EDITOR": str(editor)})
    assert proc.returncode == 0, proc.stderr
    return [line for line in seen.read_text().splitlines() if line.startswith("# ee: ")]


def test_the_message_names_the_memories_about_the_file_not_its_folder(tmp_path: Path) -> None:
    """QA finding 11: a change to src/logship/tailer.py listed the memories naming src/logship (the
    release rule, the state memories), not the tailer's. The memories whose ``paths`` name the file come
    first, then the words of the file's own name as the index weighs them: the folders and the project's
    name (held by most memories) say nothing about the file, and a file no memory concerns gets no line."""
    repo = hooked(tmp_path, LOGSHIP)
    tailer = message_of(tmp_path, repo, "src/logship/tailer.py")
    assert sorted(line.rsplit("(", 1)[1] for line in tailer) == ["mem_partial)", "mem_tailer)"]
    state = message_of(tmp_path, repo, "src/logship/state.py")
    assert state[0] == "# ee: Duplicate lines after a restart (mem_dupes)"  # its paths name the file: first
    assert "(mem_offsets)" in state[1]  # then the one whose words name it
    assert len(state) == 2
    assert message_of(tmp_path, repo, "src/logship/uploader_queue.py") == []
    assert message_of(tmp_path, repo, "src/logship/logship.py") == []  # held by every memory: no weight


def test_a_message_given_with_m_gets_no_comments(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    git(repo, "config", "commit.cleanup", "strip")
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    assert run_git(repo, "commit", "-q", "-m", "migration").returncode == 0
    assert git(repo, "log", "-1", "--format=%B").strip() == "migration"
    git(repo, "config", "commit.cleanup", "verbatim")
    stage(repo, "db/migrations/002.sql", "ALTER TABLE u;\n")
    proc = run_git(repo, "commit", "-q", "-F", "-", stdin="two\n")
    assert proc.returncode == 0, proc.stderr
    assert "ee:" not in git(repo, "log", "-1", "--format=%B")


def test_checkout_writes_the_branch_context_file(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    proc = run_git(repo, "checkout", "-q", "-b", "fix/schema-migrations")
    assert proc.returncode == 0, proc.stderr
    context = repo / ".ee/context.md"
    wait_for(lambda: "fix/schema-migrations" in (context.read_text() if context.exists() else ""), "context")
    text = context.read_text()
    assert text.startswith("<!-- ee: context for branch fix/schema-migrations")
    assert "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in text


def test_with_ee_watch_running_the_hooks_use_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ee.hooks import warm
    from ee.hooks.refresh import done_token
    from ee.ops import risks

    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    monkeypatch.delenv("EE_NO_SERVER")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(repo), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from ee.query.document import from_arguments

        query = from_arguments("schema migrations", limit=1).doc
        wait_for(lambda: warm.server_alive() and warm.call(repo, "search", {"query": query}), "the server")
        answer = warm.call(repo, "search", {"query": query})
        assert answer is not None  # served, not run here
        assert answer["hits"][0]["id"] == "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"
        wait_for(
            lambda: warm.check(repo, "pre-commit", ["db/migrations/001.sql"], "ALTER TABLE t;\n") is not None,
            "a served check",
        )
        served = warm.check(repo, "pre-commit", ["db/migrations/001.sql"], "ALTER TABLE t;\n")
        assert served is not None  # the server runs the hooks' checks (its hook_check operation)
        assert not served.blocked
        assert any("ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in line for line in served.said)
        seen = tmp_path / "seen-message"
        editor = tmp_path / "editor"
        editor.write_text(f'#!/bin/sh\ncp "$1" "{seen}"\necho "warm commit" > "$1"\n')
        editor.chmod(0o755)
        stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
        before = done_token(repo)
        proc = run_git(repo, "commit", env={"GIT_EDITOR": str(editor)})
        assert proc.returncode == 0, proc.stderr
        assert "skipped" not in proc.stderr
        assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
        assert "(mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB)" in seen.read_text()
        # post-commit: the server caught the index up with the new HEAD, and the hook table (the memory
        # files did not change) was relabelled with that generation, so the next pre-commit trusts it.
        wait_for(lambda: done_token(repo) != before, "ee's post-commit job")
        assert (repo / ".ee/hooks/refresh.log").read_text() == ""
        table = risks.load_table(repo)
        assert table is not None
        assert table["generation"] == risks.manifest_generation(repo)
        # A commit that adds a memory: the job rebuilds the table, and the next commit is checked with it.
        before = done_token(repo)
        write(
            repo,
            "memories/upload.md",
            ANTI_PATTERN.replace("01JE4ZP6Q3V8R2K7M5T9W1X3YB", "01JE4ZP6Q3V8R2K7M5T9W1X3YC").replace(
                "db/migrations/*.sql", "src/upload/**"
            ),
        )
        run_git(repo, "add", "memories/upload.md")
        assert run_git(repo, "commit", "-q", "-m", "a memory").returncode == 0
        wait_for(lambda: done_token(repo) != before, "ee's post-commit job")
        stage(repo, "src/upload/client.py", "x = 1\n")
        proc = run_git(repo, "commit", "-m", "upload")
        assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YC" in proc.stderr
    finally:
        watcher.terminate()
        watcher.wait(timeout=60)


# ------------------------------------------------------------------------------------------ agents


def test_claude_code_entries_merge_into_existing_settings(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    Workspace.init(repo)
    theirs = {"type": "command", "command": "echo hi"}
    settings = {
        "model": "opus",
        "hooks": {"UserPromptSubmit": [{"hooks": [theirs]}], "Stop": [{"hooks": [theirs]}]},
        "permissions": {"allow": []},
    }
    write(repo, ".claude/settings.json", json.dumps(settings))
    printed = json.loads(run_cli("hooks", "agent", "claude-code", cwd=repo).out)
    assert json.loads(run_cli("hooks", "agent", "claude-code", "--json", cwd=repo).out) == printed
    human = run_cli("hooks", "agent", "claude-code", "--human", cwd=repo).out
    assert human.startswith("Merge these entries into .claude/settings.json")
    assert json.loads(human.split("\n", 1)[1]) == printed  # (--human used to print the same as --json)
    entry = printed["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert entry["type"] == "command"
    # ee by its absolute path: the harness's PATH may not hold it
    ee = shlex.join(ee_command())
    assert Path(ee_command()[0]).is_absolute()
    assert entry["command"] == f"EE_HOOK_EVENT=UserPromptSubmit {ee} context - {PACK}"
    session = printed["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert session == f"EE_HOOK_EVENT=SessionStart {ee} context --for-session {PACK}"
    assert run_cli("hooks", "agent", "claude-code", "--write", "--json", cwd=repo).data["changed"] is True
    merged = json.loads((repo / ".claude/settings.json").read_text())
    assert list(merged) == ["model", "hooks", "permissions"]
    assert merged["hooks"]["Stop"] == [{"hooks": [theirs]}]
    assert merged["hooks"]["UserPromptSubmit"] == [{"hooks": [theirs]}, {"hooks": [entry]}]
    assert len(merged["hooks"]["SessionStart"]) == 1
    before = (repo / ".claude/settings.json").read_bytes()
    assert run_cli("hooks", "agent", "claude-code", "--write", "--json", cwd=repo).data["changed"] is False
    assert (repo / ".claude/settings.json").read_bytes() == before


# ------------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("db/migrations/*.sql", "db/migrations/001.sql", True),
        ("db/migrations/*.sql", "db/other/001.sql", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/db", "src/db/models.py", True),
        ("src/db", "src/dbx/models.py", False),
        ("./Makefile", "Makefile", True),
        ("", "anything", False),
        ("src/upload/**", "src/upload", True),  # `/**` also names the folder itself
        ("src/upload/**", "src/uploads/x.py", False),
        ("**/x.py", "x.py", True),
        ("**/x.py", "deep/er/x.py", True),
        ("src/[ab].py", "src/a.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("src/?.py", "src/a.py", True),
        ("db/*.sql", "DB/a.sql", False),  # case matters, as in git
    ],
)
def test_path_globs(pattern: str, path: str, expected: bool) -> None:
    assert path_matches(pattern, path) is expected


def test_stdin_tasks() -> None:
    assert task_from_input('{"session_id": "s", "prompt": "fix the upload retry"}') == "fix the upload retry"
    assert task_from_input("plain words\n") == "plain words"
    assert task_from_input('{"no_prompt": 1}') == ""


# ------------------------------------------------------------------------------------- ee context --for-*


def test_context_for_staged_paths_branch_and_stdin(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
    memory = "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"
    for args in (["--for-staged"], ["--for-paths", "db/migrations/001.sql"], ["--for-branch"]):
        result = run_cli("context", *args, "--format", "markdown", cwd=repo)
        assert result.code == 0, (args, result.err)
        assert memory in result.out or args == ["--for-branch"], args
    hook_input = json.dumps(
        {
            "session_id": "s",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "write the schema migration for the orders table",
        }
    )
    result = run_cli("context", "-", "--format", "hook", input=hook_input, cwd=repo)
    assert result.code == 0, result.err
    out = json.loads(result.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert memory in out["additionalContext"]


def packed(repo: Path, *args: str) -> list[str]:
    """The ids of the memories ``ee context ARGS`` packs, best ranked first, or [] when it says there is
    nothing to pack for (exit 2, and why)."""
    result = run_cli("context", *args, "--json", cwd=repo)
    if result.code == 2:
        assert "no memory is about these files" in result.err, result.err
        return []
    assert result.code == 0, result.err
    items = [item for section in json.loads(result.out)["data"]["sections"] for item in section["items"]]
    return [item["id"] for item in sorted(items, key=lambda item: item["rank"])]


def test_context_for_a_file_packs_the_memories_about_the_file_not_its_folder(tmp_path: Path) -> None:
    """QA finding 11, for agents: ``ee context --for-paths`` / ``--for-staged`` packed the memories
    naming ``src`` and the project (its whole path and folders were the task). They follow the commit
    template's rule: the globs of the memories whose ``paths`` cite the file, then the file's own name
    words as the index weighs them; a file no memory concerns packs none of the others."""
    repo = hooked(tmp_path, LOGSHIP)
    assert sorted(packed(repo, "--for-paths", "src/logship/tailer.py")) == ["mem_partial", "mem_tailer"]
    # mem_dupes' paths cite the file (its text never names it); mem_offsets names it in its text
    assert sorted(packed(repo, "--for-paths", "./src/logship/state.py")) == ["mem_dupes", "mem_offsets"]
    assert packed(repo, "--for-paths", "src/logship/uploader_queue.py") == []
    assert packed(repo, "--for-paths", "src/logship/logship.py") == []  # held by every memory: no weight
    stage(repo, "src/logship/tailer.py", "def follow(path):\n    return open(path)\n")
    assert sorted(packed(repo, "--for-staged")) == ["mem_partial", "mem_tailer"]


def test_a_glob_over_a_whole_top_folder_adds_no_words_to_a_change_task(tmp_path: Path) -> None:
    """A memory citing ``src/**`` is about every file there: its glob's words are the folder's name, which
    would pack every memory naming ``src``. The glob citing the file below the top folder gives the task
    its words (a memory's paths are in the index), the folder-wide one none."""
    layout = "---\nid: mem_layout\nkind: convention\npaths: ['src/**']\n---\nsrc holds one module per part.\n"
    repo = hooked(tmp_path, LOGSHIP | {"memories/layout.md": layout})
    result = run_cli("context", "--for-paths", "src/logship/state.py", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert json.loads(result.out)["data"]["task"] == "src/logship/state.py state"
    assert sorted(packed(repo, "--for-paths", "src/logship/tailer.py")) == ["mem_partial", "mem_tailer"]


def test_context_usage_errors_and_hooks_that_never_block(tmp_path: Path) -> None:
    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    assert run_cli("context", "--for-staged", "--json", cwd=repo).code == 2  # nothing staged
    assert run_cli("context", "--for-staged", "--for-branch", "--json", cwd=repo).code == 2
    assert run_cli("context", "--for-paths", "--json", cwd=repo).code == 2
    assert run_cli("context", "words", "--for-staged", "--json", cwd=repo).code == 2
    for stdin in ('{"prompt": ""}', ""):  # an empty prompt: no context at all, exit 0 (2 blocks the prompt)
        result = run_cli("context", "-", "--format", "hook", input=stdin, cwd=repo)
        assert result.code == 0
        assert result.out == ""
        assert "ee: no context" in result.err


def test_a_server_that_does_not_answer_leaves_the_check_to_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server seems up (its pid file is locked, its socket listens) but answers nothing — busy with
    an index update, say: the hook stops waiting after a moment and checks the change itself."""
    import fcntl
    import socket

    from ee.hooks import warm
    from ee.serve import protocol

    repo = hooked(tmp_path, {"memories/mig.md": ANTI_PATTERN})
    monkeypatch.delenv("EE_NO_SERVER")
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    pid_file = os.open(folder / protocol.PID_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    os.write(pid_file, b"1\n")
    fcntl.flock(pid_file, fcntl.LOCK_EX)
    silent = socket.socket(socket.AF_UNIX)
    try:
        silent.bind(str(folder / protocol.SOCKET))
        silent.listen(8)  # connections wait in the backlog, never answered
        assert warm.server_alive()
        assert warm.check(repo, "pre-commit", ["db/migrations/001.sql"], "") is None
        stage(repo, "db/migrations/001.sql", "ALTER TABLE t;\n")
        # The hook as git runs it (not a whole commit: post-commit's background job would ask too).
        proc = subprocess.run(
            [str(repo / ".git/hooks/pre-commit")], cwd=repo, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
        assert "ee: warning: anti-pattern mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB" in proc.stderr
        assert "skipped" not in proc.stderr
    finally:
        silent.close()
        os.close(pid_file)


BROKEN_YAML = "---\nkind: [rule\n---\nDeploy with make release.\n"
GIT_MARKERS = (
    "---\nkind: rule\n---\n<<<<<<< HEAD\nDeploy on Thursdays.\n=======\nDeploy on Fridays.\n>>>>>>> feat\n"
)


def test_pre_commit_warns_about_a_memory_file_ee_cannot_read(tmp_path: Path) -> None:
    """Broken YAML and git's conflict markers never land silently (issue 36, item 2): the hook names
    file:line and the repair; the commit goes on unless [hooks] block = true."""
    repo = hooked(tmp_path)
    stage(repo, "memories/bad.md", BROKEN_YAML)
    stage(repo, "memories/merged.md", GIT_MARKERS)
    proc = run_git(repo, "commit", "-m", "two broken memories")
    assert proc.returncode == 0, proc.stderr
    assert "ee: warning: memories/bad.md:2: invalid YAML in frontmatter" in proc.stderr
    assert "ee: warning: memories/merged.md:4: git's conflict markers from a merge" in proc.stderr
    assert "(repair: keep one version in memories/merged.md and delete the marker lines" in proc.stderr
    assert "(repair: fix the YAML on that line" in proc.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "two broken memories"
    # Search and context name the conflicted file as broken, never a hit titled "<<<<<<< HEAD".
    for args in (("search", "deploy Fridays Thursdays"), ("context", "deploy on Fridays")):
        result = run_cli(*args, "--json", cwd=repo)
        assert result.code == 0, result.err
        assert "<<<<<<<" not in json.dumps(result.json["data"])
        notes = {d["code"]: d["message"] for d in result.json["degraded"]}
        assert notes["memory_conflicted"].startswith("memories/merged.md:4: git's conflict markers")
        assert "memories/bad.md:2: invalid YAML" in notes["memory_invalid"]


def test_pre_commit_blocks_a_broken_memory_file_when_configured(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    write(repo, ".ee/config.toml", "[hooks]\nblock = true\n")
    before = git(repo, "rev-parse", "HEAD")
    stage(repo, "memories/merged.md", GIT_MARKERS)
    proc = run_git(repo, "commit", "-m", "markers")
    assert proc.returncode != 0
    assert "ee: blocked: memories/merged.md:4: git's conflict markers from a merge" in proc.stderr
    assert "ee: commit blocked ([hooks] block = true in .ee/config.toml)" in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == before
    stage(repo, "memories/merged.md", "---\nkind: rule\n---\nDeploy on Thursdays.\n")
    proc = run_git(repo, "commit", "-m", "one version")
    assert proc.returncode == 0, proc.stderr
    assert "ee: blocked" not in proc.stderr


def test_a_session_starts_with_the_project_rules_on_any_branch(tmp_path: Path) -> None:
    """SessionStart (issue 36, item 8): the rules and conventions that hold for the whole project, within
    budget, whatever the branch and its commit subjects; not a pack built from recent commit subjects."""
    rules = {
        "memories/tests.md": "---\nkind: rule\n---\nTests use real git repositories, never mocks.\n",
        "memories/style.md": "---\nkind: convention\n---\nErrors end with the next command to try.\n",
        "memories/make.md": "---\nkind: command\n---\nRun make test before pushing.\n",
        "memories/retry.md": "---\nkind: anti-pattern\n---\nNever retry a failed migration blindly.\n",
    }
    other = {
        "memories/fact.md": "---\nkind: fact\n---\nThe upload service lives in svc/upload.\n",
        "memories/why.md": "---\nkind: decision\n---\nWe chose Postgres for the upload queue.\n",
    }
    repo = hooked(tmp_path, rules | other)
    for branch in ("main", "fix/upload-timeout"):
        if branch != "main":
            git(repo, "checkout", "-q", "-b", branch)
            stage(repo, "svc/upload.py", "TIMEOUT = 30\n")
            git(repo, "commit", "-q", "--no-verify", "-m", "Raise the upload timeout")
        else:
            git(repo, "branch", "-M", "main")
        result = run_cli("context", "--for-session", "--max-tokens", "1200", "--json", cwd=repo)
        assert result.code == 0, result.err
        data = result.json["data"]
        kinds = sorted(item["kind"] for section in data["sections"] for item in section["items"])
        assert kinds == ["anti-pattern", "command", "convention", "rule"], (branch, kinds)
        assert data["budget"]["used_tokens"] <= 1200
    hook = run_cli("context", "--for-session", *PACK.split(), cwd=repo, input="{}")
    assert hook.code == 0, hook.err
    injected = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert "Tests use real git repositories" in injected
    assert "Postgres" not in injected
    assert run_cli("context", "--for-session", "--for-branch", cwd=repo).code == 2
