"""``ee doctor`` reports what killed processes left (temporaries next to memories, of ee's private git
index, of the index) and ``ee doctor --fix`` removes them, never while a live writer holds the lock."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import pytest

from ee.index.freshness import index_lock
from ee.store.files import workspace_lock
from ee.workspace import Workspace
from tests.conftest import doctor_report, run_cli, run_ee_process


def _doctor(ws: Workspace, *args: str, code: int = 0) -> dict[str, Any]:
    res = run_cli("--workspace", str(ws.root), "doctor", *args, "--json")
    assert res.code == code, res.out + res.err
    data: dict[str, Any] = doctor_report(res.json)
    return data


def _leftovers(data: dict[str, Any]) -> dict[str, str]:
    return {p["path"]: p["code"] for p in data["problems"] if p["code"].startswith("leftover_")}


def _killed(ws: Workspace, label: str, *args: str) -> None:
    """Run ``ee ARGS`` as a real process that SIGKILLs itself at crash point ``label``."""
    env = {"EE_CRASH_AT": label, "EE_NO_SERVER": "1"}
    proc = run_ee_process("--workspace", str(ws.root), *args, cwd=ws.root, env=env)
    assert proc.returncode == -9, proc.stderr


@pytest.fixture
def littered(ws: Workspace) -> Workspace:
    """A workspace after kills at the worst moments: a memory's temporary file, a part-written generation
    folder, a manifest's temporary, and the lock of ee's private git index."""
    ws.remember("the deploy runner needs a warm cache", kind="fact")
    run_cli("--workspace", str(ws.root), "search", "deploy", "--json")  # an index to update
    _killed(ws, "write.temp", "remember", "never renamed into place")
    ws.remember("a memory that makes the index stale", kind="fact")
    _killed(ws, "index.segment", "search", "deploy", "--json")
    ws.remember("another one", kind="fact")
    _killed(ws, "index.manifest", "search", "deploy", "--json")
    (ws.git.git_dir / "ee" / "index-memories.lock").write_bytes(b"")
    return ws


def test_doctor_reports_each_leftover_with_a_repair(littered: Workspace) -> None:
    data = _doctor(littered)
    found = _leftovers(data)
    kinds = sorted(found.values())
    assert kinds == [
        "leftover_git_temp",
        "leftover_index_temp",
        "leftover_index_temp",
        "leftover_temp_file",
    ], found
    assert any(path.startswith("memories/.ee-tmp-") for path in found)
    assert any(path.startswith(".ee/index/gen-") and path.endswith(".tmp") for path in found)
    assert any(path.startswith(".ee/index/manifest.json.") for path in found)
    assert any(path.endswith(".git/ee/index-memories.lock") for path in found)
    for problem in data["problems"]:
        if problem["code"].startswith("leftover_"):
            assert problem["severity"] == "warning"
            assert problem["repair"].startswith("ee doctor --fix")
    assert data["healthy"] is True  # nothing a reader sees is wrong
    human = run_cli("--workspace", str(littered.root), "doctor", "--human").out
    assert "ee doctor --fix" in human


def test_doctor_fix_removes_them_and_the_store_is_intact(littered: Workspace) -> None:
    before = len(littered.list()[0])  # (not `ee memory list`: it opens the index, which would tidy it first)
    data = _doctor(littered, "--fix")
    assert len(data["fixed"]["removed"]) == 4
    assert data["fixed"]["skipped"] == []
    assert data["fixed"]["recovered"] is None
    assert _leftovers(data) == {}
    assert _leftovers(_doctor(littered)) == {}
    assert run_cli("--workspace", str(littered.root), "memory", "list", "--json").data["count"] == before
    hits = run_cli("--workspace", str(littered.root), "search", "another", "--json").data["hits"]
    assert [h["title"] for h in hits][:1] == ["another one"]


def test_doctor_fix_leaves_what_a_lock_holder_may_be_using(
    littered: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ee.ops.recovery.LOCK_WAIT", 0.2)  # (the default waits a few seconds for the lock)
    workspace_kind = {p for p, code in _leftovers(_doctor(littered)).items() if code != "leftover_index_temp"}
    assert len(workspace_kind) == 2
    with workspace_lock(littered.root):
        data = _doctor(littered, "--fix")
        # While a writer holds the lock its temporaries are no leftovers: not reported, not removed.
        assert set(_leftovers(data).values()) <= {"leftover_index_temp"}
    assert {item["path"] for item in data["fixed"]["skipped"]} == workspace_kind
    assert all("workspace lock is held" in item["reason"] for item in data["fixed"]["skipped"])
    assert all(path.startswith(".ee/index/") for path in data["fixed"]["removed"])
    assert set(_leftovers(_doctor(littered))) == workspace_kind  # reported again once the lock is free
    with index_lock(littered.root):
        part_written = littered.root / ".ee" / "index" / "gen-1-1.tmp"
        part_written.mkdir()
        data = _doctor(littered, "--fix")
        assert part_written.is_dir()  # an index writer holds the lock: its folder stays
        assert ".ee/index/gen-1-1.tmp" not in _leftovers(data)
    assert [item["path"] for item in data["fixed"]["skipped"]] == [".ee/index/gen-1-1.tmp"]
    assert _leftovers(_doctor(littered, "--fix")) == {}
    assert not part_written.exists()


def test_the_journal_of_a_running_import_is_not_reported(ws: Workspace) -> None:
    from ee.ops.recovery import begin_import, end_import

    with workspace_lock(ws.root):
        begin_import(ws.root, {"memories/a-0000001.md": "0" * 40}, "ee: import 1 memories", {})
        assert "import_interrupted" not in [p["code"] for p in _doctor(ws)["problems"]]
    # Its writer is gone: an error (exit 4) until the import is finished or undone.
    assert "import_interrupted" in [p["code"] for p in _doctor(ws, code=4)["problems"]]
    (ws.root / ".ee" / "import-journal.json.tmp").write_bytes(b"{")  # as a kill while writing it leaves
    data = _doctor(ws, "--fix")
    assert data["fixed"]["recovered"]["action"] == "nothing_written"
    assert data["fixed"]["removed"] == [".ee/import-journal.json.tmp"]
    assert data["problems"] == []
    end_import(ws.root)


def test_a_lock_held_by_another_process_is_respected(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, with the lock held by a separate live process (as a running `ee remember` holds it)."""
    import subprocess

    monkeypatch.setattr("ee.ops.recovery.LOCK_WAIT", 0.2)
    temp = ws.root / "memories" / ".ee-tmp-0123456789abcdef01234567"
    temp.write_bytes(b"being written")
    code = (
        "import sys, time; from pathlib import Path; from ee.store.files import workspace_lock\n"
        "with workspace_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(ws.root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        data = _doctor(ws, "--fix")
        assert temp.exists()
        assert data["fixed"]["skipped"][0]["path"] == "memories/.ee-tmp-0123456789abcdef01234567"
        assert any(p["code"] == "lock_held" for p in data["problems"])
    finally:
        holder.kill()
        holder.wait()
    assert _doctor(ws, "--fix")["fixed"]["removed"] == ["memories/.ee-tmp-0123456789abcdef01234567"]
    assert not temp.exists()


def test_a_fresh_temporary_in_the_workspace_root_is_left_alone(ws: Workspace) -> None:
    """Tools that do not take the workspace lock write there too: only a minute-old one is a leftover."""
    fresh = ws.root / ".ee-tmp-fresh"
    fresh.write_bytes(b"x")
    old = ws.root / ".ee-tmp-old"
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert _leftovers(_doctor(ws)) == {".ee-tmp-old": "leftover_temp_file"}
    assert _doctor(ws, "--fix")["fixed"]["removed"] == [".ee-tmp-old"]
    assert fresh.exists()
    assert not old.exists()


def test_an_import_sweeps_the_temporaries_of_killed_writers(ws: Workspace) -> None:
    _killed(ws, "write.temp", "remember", "killed before the rename")
    temps = list((ws.root / "memories").glob(".ee-tmp-*"))
    assert len(temps) == 1
    res = run_cli("--workspace", str(ws.root), "import", "jsonl", "-", "--json", input='{"body": "next"}\n')
    assert res.code == 0, res.err
    assert not temps[0].exists()
    assert json.loads(res.out)["data"]["imported"] == 1


def test_an_old_git_index_lock_is_reported_and_left_to_a_person(ws: Workspace) -> None:
    lock = ws.git.git_dir / "index.lock"
    lock.write_bytes(b"")
    assert "git_index_lock_stale" not in [p["code"] for p in _doctor(ws)["problems"]]  # may be live
    os.utime(lock, (time.time() - 3600, time.time() - 3600))
    data = _doctor(ws, "--fix")
    problem = next(p for p in data["problems"] if p["code"] == "git_index_lock_stale")
    assert problem["repair"].startswith(f"rm {lock}")
    assert lock.exists()  # no lock proves that no git command holds it: a person decides
