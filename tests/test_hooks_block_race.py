"""A blocking memory written just before a commit blocks it (issue 19, item 11).

Right after ``git checkout -b``, ``ee remember`` of a ``block`` failure memory and then a commit of a file it
names let the change through in 2-3 runs of 4. Two stale tables were taken for fresh ones:

* the pre-commit hook, when ``ee watch``'s server did not answer in time, trusted the index manifest,
  which the watcher writes a moment after a change: a table built before the memory matched it;
* the post-checkout job stat'ed the files, then opened the index after the memory landed, and labelled the
  table it had (built without the memory) with the new generation.

A table is now fresh only when the files were its own both before and after the view it is labelled with
was opened, or by a stat taken now. The first tests pin each cause; the last runs the user's sequence.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ee.hooks.run import BLOCKED, Hook, check_change
from ee.index.view import open_index
from ee.ops import risks
from ee.workspace import Workspace
from tests.conftest import git, make_repo, run_cli, stop_server

BLOCKING = """\
---
id: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB
kind: failure
tags: [block]
paths: [src/app.py]
---
Editing app.py without its migration broke the deploy.
"""


def table_of(repo: Path, generation: str | None = None) -> risks.Table:
    """The hook table, its index opened as a hook without the server opens it (when it must catch up)."""
    from ee.hooks.refresh import index_at

    return risks.current_table(repo, lambda: index_at(repo), generation)


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n", "src/app.py": "x = 1\n"})
    Workspace.init(repo)  # which commits its files
    return repo


def _remember(repo: Path) -> None:
    """A person's blocking memory, written and committed as ``ee remember`` does: only a memory a person
    wrote or reviewed blocks, and a version not committed yet is capped at agent_assertion (issue 31)."""
    (repo / "memories/fail.md").write_text(BLOCKING, encoding="utf-8")
    git(repo, "add", "memories/fail.md")
    git(repo, "commit", "-q", "-m", "ee: remember a failure")


def test_a_table_older_than_the_files_is_not_trusted_on_the_manifests_word(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = table_of(repo)  # built, and labelled with the index generation of the moment
    assert before.data["generation"] == risks.manifest_generation(repo)
    _remember(repo)  # the index has not seen it yet
    hook = Hook("pre-commit", [], str(repo), str(repo), warm=True)  # as when the server did not answer
    assert check_change(hook, ["src/app.py"], "x = 2\n") == BLOCKED


def test_a_memory_written_while_the_job_ran_is_not_labelled_away(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    table_of(repo)
    digest = risks.memory_digest(repo)  # the job's stat, taken before it opens the index ...
    _remember(repo)  # ... an `ee remember` lands ...
    view = open_index(Workspace(repo))  # ... and the view the job opens holds it
    table = risks.refresh_table(repo, view, digest)
    found = risks.Table(table).findings(["src/app.py"], None)
    assert [f.entry.id for f in found] == ["mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"]
    # Checked against that view (as ee watch's server does), the commit is blocked.
    blocked, said = risks.warnings(
        repo, ["src/app.py"], "x = 2\n", lambda: False, lambda: view, view.manifest["generation"]
    )
    assert blocked
    assert said[-1].startswith("ee: commit blocked")


RUNS = 8


@pytest.mark.parametrize("run", range(RUNS))
def test_checkout_remember_commit_is_blocked_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: int
) -> None:
    """The sequence that raced, as a person runs it, with ee watch started on demand by the hooks."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("EE_HOOK_TIMEOUT", "30")
    monkeypatch.delenv("EE_NO_SERVER")
    repo = _repo(tmp_path)
    assert run_cli("hooks", "install", "--json", cwd=repo).code == 0
    env = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"}

    def sh(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=120
        )

    try:
        assert sh("git", "checkout", "-q", "-b", "feature").returncode == 0
        remembered = sh(
            sys.executable, "-m", "ee", "remember", "Editing app.py without its migration broke the deploy.",
            "--kind", "failure", "--tags", "block", "--path", "src/app.py",
        )  # fmt: skip
        assert remembered.returncode == 0, remembered.stderr
        (repo / "src/app.py").write_text("x = 2\n", encoding="utf-8")
        assert sh("git", "add", "src/app.py").returncode == 0
        committed = sh("git", "commit", "-m", "change app")
        assert committed.returncode != 0, f"run {run}: the change got through\n{committed.stderr}"
        assert "ee: commit blocked" in committed.stderr
        assert git(repo, "log", "-1", "--format=%s").startswith("ee: remember")
    finally:
        stop_server(repo)
