"""kill -9 real ``ee`` processes in the middle of a remember, an import, a tags edit and an index build or
update; after every kill: ``git fsck`` clean, no partial memory file, no committed memory lost, git's index
never set to undo an ee commit, and the next command repairs the index (equal to a fresh rebuild).

Kill points are chosen two ways: deterministically, with ``EE_CRASH_AT=<label>`` (ee/_crash.py: the
process SIGKILLs itself at a labelled point such as "temporary file written, not renamed" or "commit
written, HEAD not moved"), and by timing (SIGKILL after a random delay spanning the operation, to the ee
process alone or to its whole process group, git children included).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import CRASH_LABELS, CrashFigures, CrashLab, child_env, ee_args, leftovers, run_ee, run_killed


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> CrashLab:
    return CrashLab(tmp_path_factory.mktemp("crash"), import_size=200, index_size=150, seed=1)


def _report(figures: CrashFigures) -> None:
    print("\n" + figures.line())
    assert figures.problems == []


@pytest.mark.parametrize("op", ["remember", "tags", "import", "index"])
def test_every_labelled_crash_point_is_survived(lab: CrashLab, op: str) -> None:
    figures = lab.run(op, labels=True, random_kills=0)
    _report(figures)
    assert figures.trials == len(CRASH_LABELS[op])
    assert figures.killed == figures.trials  # each label was reached


@pytest.mark.parametrize("op", ["remember", "import", "index"])
def test_a_few_random_kills(lab: CrashLab, op: str) -> None:
    _report(lab.run(op, labels=False, random_kills=3))


def test_a_temporary_file_left_by_a_kill_is_never_read_as_a_memory(tmp_path: Path) -> None:
    from .harness import head_memories, new_workspace

    root = tmp_path / "ws"
    new_workspace(root, shared=2)
    env = child_env({"EE_CRASH_AT": "write.temp"})
    killed = run_killed(
        ee_args(root, "remember", "never renamed into place"), root, env, delay=None, group=False
    )
    assert killed.killed
    tmp = list((root / "memories").glob(".ee-tmp-*"))
    assert len(tmp) == 1
    assert b"never renamed into place" in tmp[0].read_bytes()
    listed = json.loads(run_ee(root, "memory", "list", "--json").stdout)["data"]
    assert listed["count"] == 2 == len(head_memories(root))
    found = json.loads(run_ee(root, "search", "renamed", "--mode", "lexical", "--json").stdout)["data"]
    assert found["hits"] == []
    doctor = json.loads(run_ee(root, "doctor", "--json").stdout)["data"]
    assert doctor["memories"] == 2
    assert leftovers(root)["tmp_files"] == 1  # left for `ee doctor` to clean (reported to the lead)


def test_a_commit_killed_before_head_moved_leaves_the_memory_staged_never_reverted(tmp_path: Path) -> None:
    """Killed between git's index and HEAD: a plain `git commit` by the user then includes the memory
    (the other order made that commit delete it)."""
    from .harness import git, head_memories, new_workspace, staged_reverts

    root = tmp_path / "ws"
    new_workspace(root)
    env = child_env({"EE_CRASH_AT": "git.index"})
    run_killed(ee_args(root, "remember", "staged by a killed remember"), root, env, delay=None, group=False)
    assert staged_reverts(root) == []
    (root / "notes.txt").write_text("the user's own work\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-q", "-m", "user commit")
    assert len(head_memories(root)) == 1  # the memory went in with the user's commit, not out


@pytest.mark.slow
@pytest.mark.parametrize("op", ["remember", "tags", "import", "index"])
def test_twenty_five_random_kills_per_operation(tmp_path_factory: pytest.TempPathFactory, op: str) -> None:
    lab = CrashLab(tmp_path_factory.mktemp(f"crash-{op}"), import_size=2000, index_size=2000, seed=5)
    figures = lab.run(op, labels=True, random_kills=25, check_index=op == "index")
    _report(figures)
    assert figures.trials >= 25
