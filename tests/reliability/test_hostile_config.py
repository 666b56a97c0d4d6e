"""A repository's committed ``.ee/config.toml`` is data, not an instruction to load what the repository
ships: a ``model.path`` naming a folder inside it is refused (lexical search, said), while the user's own
``$EE_MODEL`` may name the same folder."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git

from ee.index.embedder import DEFAULT_MODEL_DIR
from ee.workspace import Workspace


def _shipped_model(ws: Workspace) -> Path:
    vendored = ws.root / "vendor" / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, vendored)
    return vendored


@pytest.mark.parametrize("spelling", ["relative", "absolute", "dotted"])
def test_a_model_the_repository_ships_is_never_loaded(
    ws: Workspace, cli: Any, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EE_MODEL", raising=False)
    vendored = _shipped_model(ws)
    named = {
        "relative": "vendor/model",
        "absolute": str(vendored),
        "dotted": "memories/../vendor/model",
    }[spelling]
    (ws.root / ".ee" / "config.toml").write_text(f'[model]\npath = "{named}"\n', encoding="utf-8")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a cloned repository's settings and model")
    assert cli("remember", "The orders table lives in Postgres.", "--json").code == 0
    found = cli("search", "where do orders live", "--json")
    assert found.code == 0, found.out
    [problem] = [d for d in found.json["degraded"] if "never loads a model a repository" in d["message"]]
    assert problem["code"] == "semantic_unavailable"
    assert "EE_MODEL" in problem["repair"]


def test_the_users_own_ee_model_may_name_it(ws: Workspace, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EE_MODEL", str(_shipped_model(ws)))
    assert cli("remember", "The orders table lives in Postgres.", "--json").code == 0
    found = cli("search", "where do orders live", "--json")
    assert found.code == 0, found.out
    assert not [d for d in found.json["degraded"] if d["code"] == "semantic_unavailable"]


def _plant_a_package(root: Path, marker: Path) -> None:
    """An ``ee/`` folder a repository ships at its top: imported by any ``python -m`` run in that folder
    without ``-P``, which would run the repository's code as the user."""
    for name in ("__init__.py", "__main__.py", "serve/__init__.py", "serve/server.py", "hooks/__init__.py"):
        path = root / "ee" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n", encoding="utf-8")


def test_the_server_ee_starts_never_imports_an_ee_folder_the_repository_ships(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from conftest import run_cli, stop_server

    from ee.serve.client import server_pid

    marker = tmp_path / "ran"
    _plant_a_package(ws.root, marker)
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a cloned repository with an ee/ folder")
    monkeypatch.delenv("EE_NO_SERVER")
    try:
        assert run_cli("remember", "The orders table lives in Postgres.", cwd=ws.root).code == 0
        assert run_cli("search", "orders", "--json", cwd=ws.root).code == 0
        deadline = time.monotonic() + 120
        while server_pid() is None and time.monotonic() < deadline:  # (a wait, not a timing check)
            time.sleep(0.1)
        assert server_pid() is not None, "no server started: the check would prove nothing"
    finally:
        stop_server()
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_the_merge_driver_never_imports_an_ee_folder_the_repository_ships(
    ws: Workspace, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    memory = ws.root / "memories" / "ci.md"
    memory.write_text("---\nid: mem_ci\ntags: [ci]\n---\nThe CI timeout is 30 minutes.\n", encoding="utf-8")
    _plant_a_package(ws.root, marker)
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "base")
    ours = git(ws.root, "branch", "--show-current").strip()
    git(ws.root, "checkout", "-q", "-b", "theirs")
    memory.write_text(memory.read_text(encoding="utf-8").replace("tags: [ci]", "tags: [ci, lint]"), "utf-8")
    git(ws.root, "commit", "-q", "-am", "theirs")
    git(ws.root, "checkout", "-q", ours)
    memory.write_text(memory.read_text(encoding="utf-8").replace("30 minutes", "45 minutes"), "utf-8")
    git(ws.root, "commit", "-q", "-am", "ours")
    git(ws.root, "merge", "-q", "--no-edit", "theirs")  # both sides changed it: git runs ee's driver
    merged = memory.read_text(encoding="utf-8")
    assert "45 minutes" in merged
    assert "lint" in merged  # (the driver ran: a plain line merge of these two would conflict)
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_init_replaces_a_merge_driver_an_older_ee_registered_without_p(ws: Workspace) -> None:
    import sys

    git(ws.root, "config", "merge.ee-memory.driver", f"{sys.executable} -m ee merge-driver %O %A %B %P")
    assert Workspace.init(ws.root)
    assert " -P -m ee merge-driver" in git(ws.root, "config", "--get", "merge.ee-memory.driver")
