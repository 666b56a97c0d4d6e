"""ee.spawn: the git processes ``ee remember`` starts without ``subprocess`` (real git, real pipes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from ee import spawn
from ee.errors import GitError
from ee.gitrepo import Git, blob_id


def _run(args: list[str], cwd: Path, **kwargs: object) -> tuple[int | None, bytes, bytes]:
    child = spawn.start(args, str(cwd), **kwargs)  # type: ignore[arg-type]
    out, err = child.communicate()
    return child.returncode, out, err


def test_output_error_and_exit_code_in_the_folder_given(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    code, out, err = _run(["git", "rev-parse", "--show-toplevel"], repo / "")
    assert (code, out.decode().strip(), err) == (0, str(repo), b"")
    code, out, err = _run(["git", "rev-parse", "--verify", "no-such-ref"], repo)
    assert code == 128
    assert out == b""
    assert b"no-such-ref" in err or b"Needed a single revision" in err


def test_input_larger_than_a_pipe_holds_while_output_flows(tmp_path: Path) -> None:
    """Input is fed without blocking while both outputs are read: no deadlock, every byte through."""
    repo = make_repo(tmp_path / "repo")
    data = os.urandom(3 * 1024 * 1024)
    code, out, _err = _run(["git", "hash-object", "-w", "--stdin"], repo, data=data)
    assert code == 0
    assert out.decode().strip() == blob_id(data)
    sha = out.decode().strip()
    code, out, _err = _run(["git", "cat-file", "--batch"], repo, data=((sha + "\n") * 4).encode())
    assert code == 0
    assert out.count(data) == 4  # 12 MB of output to 4 lines of input


def test_input_from_a_descriptor_the_caller_closes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    read, write = os.pipe()
    os.write(write, b"some text\n")
    os.close(write)
    try:
        child = spawn.start(["git", "hash-object", "--stdin"], str(repo), stdin_fd=read)
    finally:
        os.close(read)
    out, _err = child.communicate()
    assert child.returncode == 0
    assert out.decode().strip() == blob_id(b"some text\n")


def test_the_child_runs_in_its_own_session_with_sigpipe_at_its_default(tmp_path: Path) -> None:
    """A kill of ee's process group never reaches the git process (it finishes and drops its lock), and
    git sees SIGPIPE and SIGXFSZ as subprocess leaves them, not as Python ignores them."""
    repo = make_repo(tmp_path / "repo")
    probe = "alias.probe=!ps -o sid= -p $$; grep SigIgn /proc/self/status"
    code, out, err = _run(["git", "-c", probe, "probe"], repo)
    assert code == 0, err
    session, _label, mask = out.split()
    assert int(session) != os.getsid(0)
    ignored = int(mask, 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))
    # ... where this (Python) process ignores both
    own = int(Path("/proc/self/status").read_text().split("SigIgn:")[1].split()[0], 16)
    assert own & (1 << (signal.SIGPIPE - 1))


def test_no_descriptor_of_ee_leaks_into_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    held = os.open(repo / ".git" / "HEAD", os.O_RDONLY)  # as the workspace lock is held
    assert held > 3
    try:
        code, out, _err = _run(["git", "-c", "alias.fds=!ls /proc/self/fd", "fds"], repo)
    finally:
        os.close(held)
    assert code == 0
    assert str(held) not in out.decode().split()


def test_only_git_is_started(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="git only"):
        spawn.start(["sh", "-c", "true"], str(tmp_path))


def test_a_missing_git_is_reported_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError):
        spawn.start(["git", "status"], str(repo))
    with pytest.raises(GitError, match="git is not installed"):
        Git(repo).run("update-ref", "refs/heads/x", "HEAD", holds_lock=True)


def test_an_interrupted_wait_still_waits_for_git(tmp_path: Path) -> None:
    """Ctrl-C while git holds a lock: ee waits for it to end (so no index.lock is left) and re-raises."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    script = (
        "import os, signal, sys\n"
        "from ee import spawn\n"
        "child = spawn.start(['git', '-c', 'alias.slow=!sleep 0.5; touch done', 'slow'], sys.argv[1])\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.1)\n"
        "signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))\n"
        "try:\n"
        "    child.communicate()\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', child.returncode, os.path.exists(os.path.join(sys.argv[1], 'done')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(repo)], capture_output=True, text=True, check=False
    )
    assert proc.stdout.split() == ["interrupted", "0", "True"], proc.stderr


def test_communicate_twice_reads_nothing_more(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    child = spawn.start(["git", "rev-parse", "HEAD"], str(repo))
    out, _err = child.communicate()
    assert len(out.strip()) == 40
    assert child.communicate() == (b"", b"")
    assert child.returncode == 0
