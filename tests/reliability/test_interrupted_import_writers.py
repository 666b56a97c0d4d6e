"""After an ``ee import`` killed before its commit, every writer finishes or undoes it before it writes
(:meth:`ee.workspace.Workspace.lock`): ``ee remember`` and ``ee sync`` never commit the import's files as
their own, and ``ee doctor`` reports the interruption as an error until then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import (
    child_env,
    doctor_report,
    ee_args,
    git,
    head_memories,
    import_lines,
    new_workspace,
    run_ee,
    run_killed,
)
from .team import make_team

SIZE = 40
JOURNAL = ".ee/import-journal.json"


def _killed_import(root: Path, label: str) -> list[str]:
    """Kill an import of SIZE memories in ``root`` at crash point ``label``; the files it left."""
    source = root.parent / "import.jsonl"
    source.write_text("\n".join(import_lines(SIZE, seed=5)) + "\n", encoding="utf-8")
    env = child_env({"EE_CRASH_AT": label})
    killed = run_killed(ee_args(root, "import", "jsonl", str(source)), root, env, delay=None, group=False)
    assert killed.killed, killed.stderr
    assert (root / JOURNAL).exists()
    status = git(root, "status", "--porcelain", "-uall", "--", "memories")
    left = sorted(line[3:] for line in status.splitlines() if line.startswith("??"))
    assert left  # the import wrote files and did not commit them
    return left


def _commits_touching(root: Path, paths: list[str]) -> list[str]:
    """The full messages of the commits on HEAD that touch any of ``paths``."""
    out = git(root, "log", "--format=%H", "--", *paths).split()
    return [git(root, "log", "-1", "--format=%B", sha) for sha in out]


def test_doctor_reports_a_killed_import_as_an_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    new_workspace(root, shared=1)
    _killed_import(root, f"write.temp:{SIZE // 2}")
    proc = run_ee(root, "doctor", "--json")
    assert proc.returncode == 4, proc.stdout
    problems = doctor_report(proc.stdout)["problems"]
    interrupted = [p for p in problems if p["code"] == "import_interrupted"]
    assert [p["severity"] for p in interrupted] == ["error"]


@pytest.mark.parametrize(
    ("label", "lands"), [(f"write.temp:{SIZE // 2}", False), (f"write.renamed:{SIZE}", True)]
)
def test_remember_never_commits_a_killed_imports_files(tmp_path: Path, label: str, lands: bool) -> None:
    root = tmp_path / "ws"
    new_workspace(root, shared=1)
    before = head_memories(root)
    left = _killed_import(root, label)

    proc = run_ee(root, "remember", "a note of my own about the release checklist", "--json")
    assert proc.returncode == 0, proc.stderr
    mine = json.loads(proc.stdout)["data"]["path"]

    own = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert own == [mine]  # the remember commit holds its own file and nothing else
    assert not (root / JOURNAL).exists()
    assert git(root, "status", "--porcelain", "--", "memories") == ""
    after = head_memories(root)
    if lands:  # all written: the import was completed, in a commit of its own
        assert len(after) == len(before) + SIZE + 1
        messages = _commits_touching(root, left)
        assert len(messages) == 1
        assert "Ee-Op: import" in messages[0]
        assert "Ee-Recovered: interrupted import, completed by ee, before its next write" in messages[0]
    else:  # not all written: undone, its files gone
        assert len(after) == len(before) + 1
        assert not any((root / rel).exists() for rel in left)
        assert _commits_touching(root, left) == []


def test_sync_never_pushes_a_killed_imports_files_as_its_own(tmp_path: Path) -> None:
    remote, (root,) = make_team(tmp_path, 1, branch=False)
    left = _killed_import(root, f"write.temp:{SIZE // 2}")

    proc = run_ee(root, "sync", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not any((root / rel).exists() for rel in left)
    assert not (root / JOURNAL).exists()
    pushed = git(remote, "log", "--all", "--name-only", "--format=")
    assert not set(left) & set(pushed.split())


def test_a_damaged_journal_stops_a_writer_with_a_storage_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    new_workspace(root, shared=1)
    left = _killed_import(root, f"write.temp:{SIZE // 2}")
    (root / JOURNAL).write_text("{not json", encoding="utf-8")
    head = git(root, "rev-parse", "HEAD")

    proc = run_ee(root, "remember", "a note of my own", "--json")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # storage
    error = json.loads(proc.stdout)["error"]
    assert "import" in error["message"]
    assert JOURNAL in error["repair"]
    assert "Traceback" not in proc.stderr
    assert git(root, "rev-parse", "HEAD") == head  # nothing committed ...
    assert all((root / rel).exists() for rel in left)  # ... nor removed on a journal ee cannot trust
