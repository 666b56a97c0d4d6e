"""How ee is installed: its distribution name, the import-name clash with earthengine-api (``ee doctor``),
and the absolute command that agent hooks and MCP clients are given."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

import ee
from ee.install import DISTRIBUTION, ee_command
from ee.workspace import Workspace
from tests.conftest import REPO_ROOT, doctor_report, run_ee_process

EE_PACKAGE = Path(ee.__file__).resolve().parent


def test_the_distribution_name_is_eidetic_engine_and_the_command_ee() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "eidetic-engine"
    assert project["scripts"] == {"ee": "ee.cli:main"}
    assert "mcp" in project["optional-dependencies"]


def fake_earthengine(site: Path, ee_folder: Path | None) -> Path:
    """A folder for sys.path holding earthengine-api's metadata (it claims a top-level ``ee``) and its
    ``ee`` package: a package of its own, or (``ee_folder``) a link to ee's, as when both were installed
    into one site-packages and wrote the same folder."""
    info = site / "earthengine_api-1.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: earthengine-api\nVersion: 1.0.0\n")
    (info / "top_level.txt").write_text("ee\n")
    (info / "RECORD").write_text("ee/__init__.py,,\nearthengine_api-1.0.0.dist-info/METADATA,,\n")
    if ee_folder is None:
        (site / "ee").mkdir()
        (site / "ee" / "__init__.py").write_text('"""Google Earth Engine (a stand-in)."""\n')
    else:
        (site / "ee").symlink_to(ee_folder, target_is_directory=True)
    return site


def doctor(ws: Workspace, pythonpath: str) -> tuple[int, list[dict[str, object]]]:
    proc = run_ee_process("doctor", "--json", cwd=ws.root, env={"PYTHONPATH": pythonpath})
    return proc.returncode, doctor_report(json.loads(proc.stdout))["problems"]


def clashes(problems: list[dict[str, object]]) -> list[dict[str, object]]:
    return [p for p in problems if p["code"] == "import_name_clash"]


def test_doctor_is_quiet_without_another_ee_package(ws: Workspace) -> None:
    code, problems = doctor(ws, str(EE_PACKAGE.parent))
    assert code == 0
    assert clashes(problems) == []


def test_doctor_warns_of_earthengine_api_beside_ee(ws: Workspace, tmp_path: Path) -> None:
    site = fake_earthengine(tmp_path / "site", None)
    code, problems = doctor(ws, os.pathsep.join([str(EE_PACKAGE.parent), str(site)]))
    (clash,) = clashes(problems)
    assert clash["severity"] == "warning"
    assert code == 0  # a warning: this ee works, Earth Engine's code would import it instead of its own
    assert "earthengine-api" in str(clash["message"])
    assert str(site / "ee") in str(clash["message"])
    assert "pipx install" in str(clash["repair"])
    assert "uv tool install" in str(clash["repair"])


def test_doctor_reports_earthengine_api_sharing_ee_folder_as_an_error(ws: Workspace, tmp_path: Path) -> None:
    site = fake_earthengine(tmp_path / "site", EE_PACKAGE)
    code, problems = doctor(ws, str(site))
    (clash,) = clashes(problems)
    assert clash["severity"] == "error"
    assert code == 4
    assert "overwrite each other" in str(clash["message"])


def test_ee_command_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "bin" / "ee"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bin/ee", "hooks"])
    assert ee_command() == [str(script)]
    monkeypatch.setattr(sys, "argv", ["/nowhere/pytest"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert ee_command() == [str(tmp_path / "python3"), "-P", "-m", "ee"]  # -P: not the repository's ee/
    monkeypatch.setattr(sys, "executable", str(script.parent / "python3"))
    assert ee_command() == [str(script)]  # the ee script installed beside this Python
