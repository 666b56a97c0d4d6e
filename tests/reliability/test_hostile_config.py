"""A repository's committed ``.ee/config.toml`` is data, not an instruction to load what the repository
ships: a ``model.path`` naming a folder inside it is refused (lexical search, said), while the user's own
``$EE_MODEL`` may name the same folder."""

from __future__ import annotations

import shutil
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
