"""An ``ee import jsonl`` killed with SIGKILL between writing its files and committing them: the journal it
wrote first lets ``ee doctor --fix`` (or the next import) commit the files when all were written, or
remove the ones it wrote when not, and a person's own files and edits are never taken nor deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    store_problems,
)

SIZE = 40
JOURNAL = ".ee/import-journal.json"


def _killed_import(root: Path, label: str, lines: int = SIZE) -> Path:
    """A workspace whose import of ``lines`` memories was killed at crash point ``label``."""
    source = root.parent / "import.jsonl"
    source.write_text("\n".join(import_lines(lines, seed=3)) + "\n", encoding="utf-8")
    env = child_env({"EE_CRASH_AT": label})
    killed = run_killed(ee_args(root, "import", "jsonl", str(source)), root, env, delay=None, group=False)
    assert killed.killed, killed.stderr
    return source


def _untracked(root: Path) -> list[str]:
    status = git(root, "status", "--porcelain", "-uall", "--", "memories")
    return sorted(line[3:] for line in status.splitlines() if line.startswith("??"))


def _doctor(root: Path, *args: str) -> dict[str, Any]:
    proc = run_ee(root, "doctor", *args, "--json")
    return doctor_report(proc.stdout)


def _codes(doctor: dict[str, Any]) -> list[str]:
    return sorted(p["code"] for p in doctor["problems"])


@pytest.mark.parametrize(
    ("label", "action"),
    [
        ("import.journal", "nothing_written"),
        ("write.temp:1", "nothing_written"),
        (f"write.temp:{SIZE // 2}", "removed"),
        (f"write.renamed:{SIZE - 1}", "removed"),
        (f"write.renamed:{SIZE}", "committed"),
        ("git.tree", "committed"),
        ("git.commit", "committed"),
        ("git.index", "committed"),
        ("import.committed", "already_committed"),
    ],
)
def test_doctor_fix_finishes_or_undoes_a_killed_import(tmp_path: Path, label: str, action: str) -> None:
    root = tmp_path / "ws"
    shared = new_workspace(root, shared=2)
    before = head_memories(root)
    _killed_import(root, label)
    assert (root / JOURNAL).exists()
    assert "import_interrupted" in _codes(_doctor(root))
    written = _untracked(root)

    fixed = _doctor(root, "--fix")
    recovered = fixed["fixed"]["recovered"]
    assert recovered["action"] == action
    assert recovered["kept"] == []
    after = head_memories(root)
    if action in ("committed", "already_committed"):
        assert len(after) == len(before) + SIZE  # the import landed whole
    else:
        assert after == before  # ... or not at all
    if action == "committed":
        assert sorted(recovered["committed"]) == sorted(set(after.values()) - set(before.values()))
        message = git(root, "log", "-1", "--format=%B")
        assert "Ee-Recovered: interrupted import, completed by ee doctor --fix" in message
        assert "Ee-Op: import" in message
    if action == "removed":
        assert recovered["removed"] == written
        assert written
    assert _untracked(root) == []
    assert not (root / JOURNAL).exists()
    assert not list((root / "memories").glob(".ee-tmp-*"))
    assert store_problems(root, {memory_id: before[memory_id] for memory_id in shared}) == []
    assert git(root, "status", "--porcelain", "--", "memories") == ""
    assert fixed["problems"] == []
    assert fixed["healthy"] is True


def test_a_persons_files_and_edits_are_never_taken_nor_deleted(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    new_workspace(root, shared=1)
    before = head_memories(root)
    _killed_import(root, f"write.temp:{SIZE // 2}")
    written = _untracked(root)
    assert len(written) == SIZE // 2 - 1
    edited = root / written[0]  # a person edits one of the files the import wrote...
    edited.write_text(edited.read_text(encoding="utf-8") + "a line a person added\n", encoding="utf-8")
    staged = root / written[1]  # ... stages another ...
    git(root, "add", written[1])
    mine = root / "memories" / "my-own-note.md"  # ... and writes one of their own.
    mine.write_text("---\nid: my-own-note\nkind: fact\n---\nmy own words\n", encoding="utf-8")

    recovered = _doctor(root, "--fix")["fixed"]["recovered"]
    assert recovered["action"] == "removed"
    assert sorted(recovered["kept"]) == sorted(written[:2])
    assert sorted(recovered["removed"]) == sorted(written[2:])
    assert edited.read_text(encoding="utf-8").endswith("a line a person added\n")
    assert staged.is_file()
    assert mine.read_text(encoding="utf-8").endswith("my own words\n")
    assert _untracked(root) == sorted([written[0], "memories/my-own-note.md"])
    assert git(root, "diff", "--cached", "--name-only").split() == [written[1]]
    assert head_memories(root) == before  # nothing committed on anyone's behalf


def _new_in_memories(root: Path) -> list[str]:
    """Files below memories/ that HEAD lacks: untracked, or staged as added (by ee's commit, which
    refreshes git's index while it writes its objects, when the kill came after that began)."""
    status = git(root, "status", "--porcelain", "-uall", "--", "memories")
    return sorted(line[3:] for line in status.splitlines() if line[:2] in ("??", "A "))


@pytest.mark.parametrize("label", ["git.tree", "git.commit", "git.index"])
def test_a_complete_import_with_one_file_changed_since_is_not_committed(tmp_path: Path, label: str) -> None:
    root = tmp_path / "ws"
    new_workspace(root, shared=1)
    before = head_memories(root)
    _killed_import(root, label)
    written = _new_in_memories(root)
    assert len(written) == SIZE
    if label == "git.index":  # git's index was refreshed: the killed commit staged them
        assert git(root, "diff", "--cached", "--name-only", "--", "memories").split() == written
    changed = root / written[-1]
    changed.write_text(changed.read_text(encoding="utf-8") + "changed by hand\n", encoding="utf-8")
    recovered = _doctor(root, "--fix")["fixed"]["recovered"]
    assert recovered["action"] == "removed"  # incomplete as written: the import does not land in part
    assert recovered["kept"] == [written[-1]]
    assert recovered["removed"] == written[:-1]
    assert _untracked(root) == [written[-1]]
    assert git(root, "diff", "--cached", "--name-only") == ""  # nothing left staged on anyone's behalf
    assert head_memories(root) == before


def test_the_next_import_recovers_first(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    new_workspace(root)
    _killed_import(root, f"write.renamed:{SIZE}")
    second = root.parent / "second.jsonl"
    second.write_text(json.dumps({"body": "a memory imported after the crash"}) + "\n", encoding="utf-8")
    proc = run_ee(root, "import", "jsonl", str(second), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["data"]
    assert data["imported"] == 1
    assert data["recovered"]["action"] == "committed"
    assert len(data["recovered"]["committed"]) == SIZE
    assert len(head_memories(root)) == SIZE + 1
    assert _untracked(root) == []
    assert not (root / JOURNAL).exists()


def test_the_same_import_run_again_after_recovery_does_not_duplicate(tmp_path: Path) -> None:
    """The files of the killed import were removed (incomplete): running the import again brings each
    memory in once."""
    root = tmp_path / "ws"
    new_workspace(root)
    source = _killed_import(root, f"write.temp:{SIZE // 2}")
    proc = run_ee(root, "import", "jsonl", str(source), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["data"]
    assert data["recovered"]["action"] == "removed"
    assert data["imported"] == SIZE
    assert len(head_memories(root)) == SIZE
    assert _untracked(root) == []
