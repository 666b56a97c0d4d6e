"""Issue 31, item 5: only memories a person wrote or reviewed can block a commit; an agent's warns.

Real git with ee's hooks installed: an agent's ``remember`` of a ``failure`` tagged ``block`` with
``paths: ["**"]`` used to make every ``git commit`` fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_cli
from tests.test_hooks import hooked, run_git, stage, write


def agents_blocking_failure(repo: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EE_AGENT", "codex")
    result = run_cli(
        "--workspace", str(repo), "remember", "Every change here broke the build once.",
        "--kind", "failure", "--tags", "block", "--path", "**", "--json",
    )  # fmt: skip
    monkeypatch.delenv("EE_AGENT")
    assert result.code == 0, result.err
    return str(result.data["id"])


@pytest.mark.parametrize("config", ["", "[hooks]\nblock = true\n"], ids=["tag", "config"])
def test_an_agents_block_memory_warns_but_does_not_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    repo = hooked(tmp_path)
    memory_id = agents_blocking_failure(repo, monkeypatch)
    if config:
        write(repo, ".ee/config.toml", config)
    stage(repo, "src/app.py", "print('hello')\n")
    proc = run_git(repo, "commit", "-m", "a change")
    assert proc.returncode == 0, proc.stderr
    assert f"ee: warning: failure {memory_id}" in proc.stderr
    assert "commit blocked" not in proc.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "a change"


def test_once_a_person_reviews_it_it_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = hooked(tmp_path)
    memory_id = agents_blocking_failure(repo, monkeypatch)
    reviewed = run_cli(
        "--workspace", str(repo), "memory", "trust", memory_id, "--class", "peer_human_attested"
    )
    assert reviewed.code == 0, reviewed.err
    stage(repo, "src/app.py", "print('hello')\n")
    proc = run_git(repo, "commit", "-m", "a change")
    assert proc.returncode != 0
    assert f"ee: blocked: failure {memory_id}" in proc.stderr
