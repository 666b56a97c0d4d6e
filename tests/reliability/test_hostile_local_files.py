"""Hostile local files (issue 19, item 9): a config that the TOML parser cannot read and a ``memories``
path that is not a folder are clear errors with their documented exit codes, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ee.errors import ExitCode
from ee.workspace import Workspace
from tests.conftest import git, run_cli


def _config(ws: Workspace) -> Path:
    return ws.root / ".ee" / "config.toml"


@pytest.mark.parametrize(
    "command", [("search", "ci"), ("memory", "list"), ("remember", "ci caches go stale")]
)
def test_deeply_nested_config_is_a_config_error(ws: Workspace, command: tuple[str, ...]) -> None:
    _config(ws).write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    res = run_cli("--workspace", str(ws.root), *command, "--json")
    assert res.code == ExitCode.CONFIG, res.err
    assert "Traceback" not in res.out + res.err
    assert "nested too deeply" in res.out + res.err
    assert str(_config(ws)) in res.out + res.err  # the repair names the file


def test_config_that_is_a_folder_is_a_config_error(ws: Workspace) -> None:
    _config(ws).unlink(missing_ok=True)
    _config(ws).mkdir()
    res = run_cli("--workspace", str(ws.root), "search", "ci", "--json")
    assert res.code == ExitCode.CONFIG, res.err
    assert "cannot be read" in res.out + res.err


@pytest.mark.parametrize("odd", ["dangling symlink", "file"])
def test_memories_that_is_not_a_folder_is_a_storage_error(ws: Workspace, odd: str) -> None:
    memories = ws.root / "memories"
    head = git(ws.root, "rev-parse", "HEAD")
    os.rename(memories, ws.root / "memories.old")
    if odd == "file":
        memories.write_text("not a folder\n", encoding="utf-8")
    else:
        memories.symlink_to(ws.root / "nowhere")
    res = run_cli("--workspace", str(ws.root), "remember", "ci caches go stale", "--json")
    assert res.code == ExitCode.STORAGE, res.err
    assert "Traceback" not in res.out + res.err
    expected = "a dangling symlink" if odd != "file" else "not a folder"
    assert f"{memories} is {expected}" in res.out + res.err
    assert git(ws.root, "rev-parse", "HEAD") == head  # nothing committed
    assert not (ws.root / "nowhere").exists()  # nothing created through the symlink
