"""A killed ``ee sync`` never leaves the store unusable (issue 31, item 9).

``kill -9`` of a real ``ee sync`` process (and its git children, as a supervisor kills a process group)
while its rebase runs: stopped there deterministically by a ``post-checkout`` hook of the test clone, which
git runs inside the rebase (``.git/rebase-merge`` present) and which waits until the test kills it.
``ee doctor`` then reports the half-done rebase as ee's, ``--fix`` aborts it, and ee writes and syncs
again with nothing lost. A rebase a person started is reported, and left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, run_ee_process

from ee.errors import ExitCode

from .team import synced_pair

BLOCKING_HOOK = """#!/bin/sh
if [ -d "$(git rev-parse --git-dir)/rebase-merge" ]; then
    touch "{ready}"
    exec sleep 600
fi
"""


def _ee(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ee_process(*args, "--json", cwd=root)


def _report(proc: subprocess.CompletedProcess[str]) -> dict:
    """ee doctor's report: the data of a healthy answer, or the details of the error it exits with."""
    doc = json.loads(proc.stdout)
    return doc["data"] if doc["success"] else doc["error"]["details"]["report"]


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the rebase never reached the hook"
        time.sleep(0.02)


def test_a_sync_killed_in_its_rebase_is_reported_and_aborted_by_doctor_fix(tmp_path: Path) -> None:
    a, b = synced_pair(tmp_path)
    assert _ee(a, "remember", "Teammate A: the staging cluster is ephemeral.").returncode == 0
    assert _ee(a, "sync").returncode == 0
    assert _ee(b, "remember", "Teammate B: run the linter before pushing.").returncode == 0
    ready = tmp_path / "in-rebase"
    hook = Path(git(b, "rev-parse", "--absolute-git-dir").strip()) / "hooks" / "post-checkout"
    hook.write_text(BLOCKING_HOOK.format(ready=ready))
    hook.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ee", "sync", "--json"],
        cwd=b,
        env={**os.environ, "EE_NO_SERVER": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _wait_for(ready, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # ee sync, its git rebase and the hook: as a supervisor would
    proc.communicate()
    hook.unlink()
    assert (b / ".git" / "rebase-merge").is_dir()  # the half-done rebase the kill left

    # Every write is refused meanwhile, and says where to look.
    blocked = _ee(b, "remember", "Written while the rebase hangs.")
    assert blocked.returncode == ExitCode.CONFLICT, blocked.stdout + blocked.stderr
    assert "ee doctor" in blocked.stdout
    # doctor reports it as ee's own...
    checked = _ee(b, "doctor")
    assert checked.returncode == ExitCode.STORAGE
    codes = {p["code"] for p in _report(checked)["problems"]}
    assert "git_operation_interrupted" in codes
    # ... and --fix aborts it: the store is usable again, nothing lost.
    fixed = _ee(b, "doctor", "--fix")
    data = _report(fixed)
    assert data["fixed"]["git"]["action"] == "aborted"
    assert "git_operation_interrupted" not in {p["code"] for p in data["problems"]}
    assert not (b / ".git" / "rebase-merge").exists()
    assert _ee(b, "remember", "Written after the repair.").returncode == 0
    assert _ee(b, "sync").returncode == 0
    assert _ee(a, "sync").returncode == 0
    listed = json.loads(_ee(a, "memory", "list").stdout)["data"]
    texts = json.dumps(listed)
    for text in ("staging cluster is ephemeral", "run the linter", "Written after the repair"):
        assert text in texts


def test_a_rebase_a_person_started_is_reported_and_never_touched(tmp_path: Path) -> None:
    a, b = synced_pair(tmp_path)
    (a / "README.md").write_text("theirs\n")
    git(a, "add", "README.md")
    git(a, "commit", "-q", "-m", "readme a")
    git(a, "push", "-q", "origin", "main")
    (b / "README.md").write_text("mine\n")
    git(b, "add", "README.md")
    git(b, "commit", "-q", "-m", "readme b")
    git(b, "fetch", "-q", "origin")
    stopped = subprocess.run(["git", "rebase", "origin/main"], cwd=b, capture_output=True, text=True)
    assert stopped.returncode != 0  # (a conflict in README.md: the person's rebase waits for them)
    # A record a killed sync once left (its rebase since aborted by hand) does not make this one ee's.
    (b / ".ee" / "sync-started.json").write_text(
        json.dumps({"mode": "rebase", "head": "0" * 40, "upstream": "1" * 40, "pid": 1}) + "\n"
    )
    checked = _report(_ee(b, "doctor"))
    problem = next(p for p in checked["problems"] if p["code"] == "git_operation_in_progress")
    assert "git rebase --abort" in problem["repair"]
    fixed = _report(_ee(b, "doctor", "--fix"))
    assert fixed["fixed"]["git"] is None
    assert any("someone started" in s["reason"] for s in fixed["fixed"]["skipped"])
    assert (b / ".git" / "rebase-merge").is_dir()  # still theirs to finish
    assert "mine" in (b / "README.md").read_text()
