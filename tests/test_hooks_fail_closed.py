"""The pre-commit secret check fails closed (issue 31, item 4): when it cannot run — ee crashes, a memory
file holds a 5,000-digit number, ``.ee/config.toml`` is broken, ``[hooks] timeout`` is tiny — the commit
is blocked with the reason and the ``git commit --no-verify`` escape named; a staged ``ghp_`` token never
reaches git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git
from tests.test_hooks import BIN, hooked, run_git, stage

TOKEN = "ghp_" + "R8f2kQ9vLx3mZp7Wt1Yc5Nb0Hs4Jd6Ga2Ue8"


@pytest.fixture(autouse=True)
def _path_has_ee(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    for var in ("EE_HOOK_EE", "EE_HOOK_TIMEOUT", "EE_HOOK_NO_TIMEOUT_CMD", "EE_HOOKS"):
        monkeypatch.delenv(var, raising=False)


def _commit_token(
    repo: Path, env: dict[str, str] | None = None, front: str = "kind: command"
) -> subprocess.CompletedProcess[str]:
    head = git(repo, "rev-parse", "HEAD")
    stage(repo, "memories/deploy.md", f"---\n{front}\n---\nDeploy with {TOKEN}\n")
    proc = run_git(repo, "commit", "-m", "deploy note", env=env)
    assert proc.returncode != 0, proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head  # nothing committed
    assert TOKEN not in proc.stderr
    return proc


def test_a_huge_number_beside_a_token_is_refused_not_skipped(tmp_path: Path) -> None:
    """The 5,000-digit number crashed the hook ("hook skipped") and the token went through."""
    proc = _commit_token(hooked(tmp_path), front=f"confidence: {'7' * 5000}")
    assert "ee: refusing to commit memories/deploy.md: it holds a secret (github_token" in proc.stderr
    assert "hook skipped" not in proc.stderr


def test_a_broken_config_does_not_skip_the_secret_check(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    (repo / ".ee" / "config.toml").write_text("[hooks\ntimeout = \n")
    proc = _commit_token(repo)
    assert "it holds a secret (github_token" in proc.stderr


def test_a_tiny_hook_timeout_does_not_skip_the_secret_check(tmp_path: Path) -> None:
    repo = hooked(tmp_path)
    (repo / ".ee" / "config.toml").write_text("[hooks]\ntimeout = 0.001\n")
    proc = _commit_token(repo)
    assert "it holds a secret (github_token" in proc.stderr


@pytest.mark.parametrize("how", ["crash", "missing"])
def test_an_ee_that_cannot_run_blocks_the_commit_and_names_the_escape(tmp_path: Path, how: str) -> None:
    repo = hooked(tmp_path)
    broken = tmp_path / "broken-ee"
    broken.write_text("#!/bin/sh\necho 'Traceback: boom' >&2\nexit 1\n")
    broken.chmod(0o755)
    env = {"EE_HOOK_EE": str(broken) if how == "crash" else str(tmp_path / "no-such-ee")}
    proc = _commit_token(repo, env)
    assert "ee: commit blocked" in proc.stderr
    assert "git commit --no-verify" in proc.stderr
    # ... and the escape it names works (the person decides).
    escaped = run_git(repo, "commit", "--no-verify", "-m", "deploy note", env=env)
    assert escaped.returncode == 0, escaped.stderr


def test_without_staged_changes_to_check_a_broken_ee_still_blocks_only_pre_commit(tmp_path: Path) -> None:
    """post-commit and the other hooks stay fail-open: a broken ee never stops a checkout or a merge."""
    repo = hooked(tmp_path)
    broken = tmp_path / "broken-ee"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    proc = run_git(repo, "checkout", "-q", "-b", "feature", env={"EE_HOOK_EE": str(broken)})
    assert proc.returncode == 0, proc.stderr
    assert "hook skipped" in proc.stderr
