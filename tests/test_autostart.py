"""``ee watch`` started on demand: the first command starts it, later ones are served, it stops by itself.

These tests let the server start (no ``EE_NO_SERVER``) and stop every server they start
(:func:`conftest.stop_server`; the autouse fixture fails a test that leaves one running).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli, stop_server
from test_server import DEADLINE, _alive, ee, wait_for

from ee.serve.watch import watcher_pid
from ee.workspace import Workspace


@pytest.fixture
def store(ws: Workspace) -> Workspace:
    (ws.root / "memories/a.md").write_text("---\nid: mem_a\ntags: [ci]\n---\nalpha rollback window\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a memory")
    return ws


def served_pid(root: Path) -> int:
    """The pid of the server of ``root``, once it answers (waits for it)."""
    wait_for(lambda: (watcher_pid(root) or 0) > 0 and (root / ".ee/serve.sock").exists(), "the server")
    pid = watcher_pid(root)
    assert pid is not None
    return pid


def log_lines(root: Path, text: str) -> list[str]:
    return [line for line in (root / ".ee/serve.log").read_text().splitlines() if text in line]


def test_the_first_command_answers_and_starts_the_server_the_next_is_served(store: Workspace) -> None:
    root = store.root
    try:
        first = ee("search", "alpha", "--json", cwd=root, served=True)
        assert first.returncode == 0
        assert [h["id"] for h in json.loads(first.stdout)["data"]["hits"]] == ["mem_a"]
        pid = served_pid(root)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"watch" in cmdline
        assert b"--on-demand" in cmdline
        assert os.getsid(pid) == pid != os.getsid(0)  # detached: its own session (and process group)
        assert os.getpgid(pid) == pid
        probe = "import sys, ee.serve.client; print(ee.serve.client.try_server(sys.argv[1:]))"
        served = subprocess.run(
            [sys.executable, "-c", probe, "search", "alpha", "--json"],
            cwd=root,
            capture_output=True,
            env={k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"},
            timeout=DEADLINE,
            check=True,
        )
        assert served.stdout == first.stdout + b"0\n"  # the same answer, by the server (exit code 0)
        assert log_lines(root, "watching")  # it logs to .ee/serve.log
    finally:
        assert stop_server(root)


def test_ten_commands_at_once_start_one_server(store: Workspace) -> None:
    root = store.root
    env = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"}
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "ee", "search", "alpha", "--json"],
                cwd=root,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(10)
        ]
        results = [proc.communicate(timeout=DEADLINE) for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 10
        assert len({out for out, _err in results}) == 1
        served_pid(root)
        # every command that found no server was free to start one: only one did
        assert len(log_lines(root, "watching")) == 1
        assert log_lines(root, "already running") == []
        running = [
            pid
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
            if _cmdline_has(pid, b"--on-demand", os.fsencode(root))
        ]
        assert len(running) == 1
    finally:
        assert stop_server(root)


def _cmdline_has(pid: int, *words: bytes) -> bool:
    try:
        parts = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return all(word in parts for word in words)


def test_a_killed_server_never_blocks_a_command_and_is_replaced(store: Workspace) -> None:
    root = store.root
    try:
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        pid = served_pid(root)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), "the server to die")
        assert (root / ".ee/serve.sock").exists()  # stale
        after = ee("search", "alpha", "--json", cwd=root, served=True)
        assert after.returncode == 0
        assert after.stderr == b""
        assert after.stdout == ee("search", "alpha", "--json", cwd=root, served=False).stdout
        assert served_pid(root) != pid  # a new server took the stale socket's place
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
    finally:
        assert stop_server(root)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pid_file_that_is_not_a_file_never_blocks_a_command(store: Workspace, kind: str) -> None:
    """``.ee/watch.pid`` a FIFO used to block every command that starts a server (and every warm git hook)
    in its open, for ever; a link to a device was written to. The server replaces it with a file."""
    root = store.root
    pid_file = root / ".ee/watch.pid"
    if kind == "fifo":
        os.mkfifo(pid_file)
    else:
        pid_file.symlink_to("/dev/null")
    try:
        first = ee("search", "alpha", "--json", cwd=root, served=True)  # (DEADLINE guards a hang)
        assert first.returncode == 0, first.stderr
        served_pid(root)
        assert pid_file.is_file()
        assert not pid_file.is_symlink()
        assert ee("search", "alpha", "--json", cwd=root, served=True).stdout == first.stdout
    finally:
        assert stop_server(root)


def test_a_log_that_is_a_fifo_never_blocks_a_command(store: Workspace) -> None:
    """The starter opened ``.ee/serve.log`` for writing, waiting for a FIFO's reader for ever."""
    root = store.root
    os.mkfifo(root / ".ee/serve.log")
    first = ee("search", "alpha", "--json", cwd=root, served=True)  # (DEADLINE guards a hang)
    assert first.returncode == 0, first.stderr
    assert first.stdout == ee("search", "alpha", "--json", cwd=root, served=False).stdout
    assert watcher_pid(root) is None  # no server started with nowhere to log


def test_the_server_stops_when_idle(store: Workspace) -> None:
    root = store.root
    (root / ".ee/config.toml").write_text("[server]\nidle_timeout = 1\n")
    try:
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        pid = served_pid(root)
        try:
            wait_for(lambda: not _alive(pid), "the idle server to stop")
        except BaseException:
            print((root / ".ee/serve.log").read_text())  # (shown with the failure)
            raise
        assert log_lines(root, "no client for 1 s: stopping")
        assert not (root / ".ee/serve.sock").exists()
    finally:
        stop_server(root)


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_the_server_stops_when_its_workspace_disappears(store: Workspace, tmp_path: Path, how: str) -> None:
    root = store.root
    try:
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        pid = served_pid(root)
        if how == "deleted":
            shutil.rmtree(root)
        else:
            root.rename(tmp_path / "moved")
        wait_for(lambda: not _alive(pid), "the server to stop")
    finally:
        stop_server(root if root.exists() else tmp_path / "moved")
        if how == "moved":
            assert "is gone: stopping" in (tmp_path / "moved/.ee/serve.log").read_text()


def test_no_server_is_started_when_turned_off(store: Workspace) -> None:
    root = store.root
    assert ee("search", "alpha", cwd=root, served=False).returncode == 0  # EE_NO_SERVER=1
    (root / ".ee/config.toml").write_text("[server]\nautostart = false\n")
    assert ee("search", "alpha", cwd=root, served=True).returncode == 0
    assert ee("remember", "a fact", cwd=root, served=True).returncode == 0
    assert watcher_pid(root) is None
    assert not (root / ".ee/serve.log").exists()


def test_a_foreground_watch_is_used_and_never_doubled(store: Workspace) -> None:
    root = store.root
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(root), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert served_pid(root) == watcher.pid
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        assert not (root / ".ee/serve.log").exists()  # nothing was started on demand
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=DEADLINE)


def test_a_git_hook_starts_the_server(store: Workspace) -> None:
    root = store.root
    assert run_cli("--workspace", str(root), "hooks", "install", "--json").code == 0
    env = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"}
    try:
        (root / "README.md").write_text("hello\n")
        git(root, "add", "README.md")
        subprocess.run(
            ["git", "commit", "-q", "-m", "readme"], cwd=root, env=env, check=True, timeout=DEADLINE
        )
        pid = served_pid(root)
        # git gave the hook its index file (and may give it GIT_DIR): the server outlives the hook, so it
        # must find its repository by itself.
        names = {item.split(b"=")[0] for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")}
        assert not names & {b"GIT_INDEX_FILE", b"GIT_DIR", b"GIT_PREFIX", b"GIT_EDITOR"}
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
    finally:
        assert stop_server(root)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[server]\nidle_timeout = 0\n", "idle_timeout"),
        ("[server]\nidle_timeout = nan\n", "idle_timeout"),
        ("[server]\nidle_timeout = 'soon'\n", "wrong type"),
        ("[server]\nautostart = 'yes'\n", "wrong type"),
    ],
)
def test_bad_server_settings_are_configuration_errors(store: Workspace, text: str, message: str) -> None:
    (store.root / ".ee/config.toml").write_text(text)
    result = ee("search", "alpha", "--json", cwd=store.root, served=True)
    assert result.returncode == 3
    assert message in json.loads(result.stdout)["error"]["message"]
    assert watcher_pid(store.root) is None
