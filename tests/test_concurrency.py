"""Several real ``ee`` processes writing at once: every write lands, in some order, and nothing is lost."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ee.workspace import Workspace
from tests.conftest import git, run_ee_process

WRITERS = 8
EACH = 25


def _remember_many(root: Path, writer: int) -> list[str]:
    ids = []
    env = {"EE_AGENT": f"agent-{writer}"} if writer % 2 else {}
    for n in range(EACH):
        proc = run_ee_process(
            "remember",
            f"Writer {writer} memory {n}: concurrent writes must all land.",
            "--tags",
            f"w{writer},bulk",
            "--json",
            cwd=root,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        ids.append(json.loads(proc.stdout)["data"]["id"])
    return ids


@pytest.mark.slow
def test_eight_processes_times_25_remembers(ws: Workspace) -> None:
    root = ws.root
    with ThreadPoolExecutor(WRITERS) as pool:
        results = list(pool.map(lambda w: _remember_many(root, w), range(WRITERS)))
    ids = [memory_id for batch in results for memory_id in batch]
    assert len(ids) == len(set(ids)) == WRITERS * EACH

    # Every memory is a file, readable, with the text its writer gave.
    memories = {m.id: m for m in ws.store.snapshot().sorted()}
    assert set(memories) == set(ids)
    for writer, batch in enumerate(results):
        for n, memory_id in enumerate(batch):
            assert memories[memory_id].body.startswith(f"Writer {writer} memory {n}:")
            expected = "agent_assertion" if writer % 2 else "human_explicit"
            assert memories[memory_id].trust == expected

    # One commit per memory (plus init), each touching its one file, in one straight line.
    log = git(root, "log", "--format=%H %P%x00%(trailers:key=Ee-Memory,valueonly)%x00", "--name-only")
    records = [r.strip() for r in log.split("\x00") if r.strip()]
    shas = git(root, "rev-list", "HEAD").split()
    assert len(shas) == WRITERS * EACH + 1
    assert all(len(line.split()) <= 2 for line in git(root, "rev-list", "--parents", "HEAD").splitlines())
    committed = [
        line.strip() for line in git(root, "log", "--format=%(trailers:key=Ee-Memory,valueonly)").split()
    ]
    assert sorted(committed) == sorted(ids)
    for sha in shas[:-1]:
        assert len(git(root, "show", "--format=", "--name-only", sha).split()) == 1
    assert records

    # The repository is sound and the working tree clean.
    fsck = subprocess.run(["git", "fsck", "--full", "--strict"], cwd=root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert "dangling commit" not in fsck.stdout
    assert git(root, "status", "--porcelain") == ""
    assert not list((root / "memories").glob(".ee-tmp-*"))
    doctor = run_ee_process("doctor", "--json", cwd=root)
    assert doctor.returncode == 0, doctor.stdout
    assert json.loads(doctor.stdout)["data"]["memories"] == WRITERS * EACH


@pytest.mark.slow
def test_concurrent_edits_of_one_memory_lose_no_update(ws: Workspace) -> None:
    target = ws.remember("Everyone tags this one.")
    root = ws.root

    def tag(writer: int) -> None:
        for n in range(3):
            proc = run_ee_process("memory", "tags", target.id, "--add", f"t{writer}-{n}", "--json", cwd=root)
            assert proc.returncode == 0, proc.stderr

    def other(writer: int) -> None:
        for n in range(3):
            proc = run_ee_process("remember", f"Side memory {writer}-{n}.", "--json", cwd=root)
            assert proc.returncode == 0, proc.stderr

    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(tag, w) for w in range(4)] + [pool.submit(other, w) for w in range(2)]
        for future in futures:
            future.result()
    assert set(ws.get(target.id).tags) == {f"t{w}-{n}" for w in range(4) for n in range(3)}
    assert len(ws.list()[0]) == 1 + 6
    assert len(git(root, "rev-list", "HEAD").split()) == 2 + 12 + 6
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_user_commit_racing_ee_never_loses_either(ws: Workspace) -> None:
    """ee's ref update names the old HEAD: a commit made by the user meanwhile is never overwritten."""
    root = ws.root
    (root / "notes.txt").write_text("0\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-qm", "user 0")

    def user() -> None:
        for n in range(1, 11):
            (root / "notes.txt").write_text(f"{n}\n")
            for _attempt in range(50):
                proc = subprocess.run(["git", "commit", "-qam", f"user {n}"], cwd=root, capture_output=True)
                if proc.returncode == 0:
                    break

    def agent() -> list[tuple[int, str]]:
        out = []
        for n in range(10):
            proc = run_ee_process("remember", f"Racing memory {n}.", "--json", cwd=root)
            out.append(
                (proc.returncode, json.loads(proc.stdout)["data"]["id"] if proc.returncode == 0 else "")
            )
        return out

    with ThreadPoolExecutor(2) as pool:
        user_future = pool.submit(user)
        results = pool.submit(agent).result()
        user_future.result()
    messages = git(root, "log", "--format=%s").splitlines()
    assert [m for m in messages if m.startswith("user ")] == [f"user {n}" for n in range(10, -1, -1)]
    assert {code for code, _id in results} <= {0, 4}  # a lost race is a clear git error, never silent loss
    landed = git(root, "log", "--format=%(trailers:key=Ee-Memory,valueonly)").split()
    for code, memory_id in results:
        if code == 0:
            assert memory_id in landed
            assert ws.get(memory_id).body.startswith("Racing memory")


def _diverged(root: Path) -> str:
    """The branch checked out and ``feat`` changed one line of code each: rebasing or merging one on the
    other conflicts. Returns the branch's name."""
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    (root / "code.txt").write_text("base\n")
    git(root, "add", "code.txt")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "feat")
    (root / "code.txt").write_text("feat\n")
    git(root, "commit", "-qam", "feat")
    git(root, "checkout", "-q", branch)
    (root / "code.txt").write_text("main\n")
    git(root, "commit", "-qam", "main")
    return branch


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (["checkout", "-q", "feat", "&&", "rebase", "BRANCH"], ["rebase", "--abort"]),
        (["bisect", "start", "HEAD", "HEAD~2"], ["bisect", "reset"]),
    ],
    ids=["rebase", "bisect"],
)
def test_a_write_during_a_rebase_or_bisect_is_refused_not_dropped_later(
    ws: Workspace, start: list[str], end: list[str]
) -> None:
    """A rebase or a bisect has HEAD on a commit it leaves when it ends: ee's commit there was dropped
    by ``git rebase --abort`` / ``git bisect reset`` after ``ee remember`` had said it was saved."""
    root = ws.root
    branch = _diverged(root)
    for step in " ".join(start).replace("BRANCH", branch).split(" && "):
        subprocess.run(["git", *step.split()], cwd=root, capture_output=True, check=False)
    proc = run_ee_process("remember", "Learned while the rebase was stopped.", "--json", cwd=root)
    assert proc.returncode == 8, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "conflict"
    assert "in progress" in error["message"]
    assert "Traceback" not in proc.stderr
    assert git(root, "status", "--porcelain", "--untracked-files=all", "--", "memories") == ""
    git(root, *end)
    git(root, "checkout", "-q", branch)
    proc = run_ee_process("remember", "Learned once it was over.", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert ws.get(json.loads(proc.stdout)["data"]["id"]).body == "Learned once it was over."


def test_a_write_during_a_merge_is_kept(ws: Workspace) -> None:
    """A merge stopped on a conflict keeps HEAD: ee's commit survives ``git merge --abort``."""
    root = ws.root
    _diverged(root)
    subprocess.run(["git", "merge", "feat"], cwd=root, capture_output=True, check=False)
    proc = run_ee_process("remember", "Learned during the merge.", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    memory_id = json.loads(proc.stdout)["data"]["id"]
    git(root, "merge", "--abort")
    assert ws.get(memory_id).body == "Learned during the merge."
    assert memory_id in git(root, "log", "-1", "--format=%(trailers:key=Ee-Memory,valueonly)")
