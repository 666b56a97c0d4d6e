"""The user's server started on demand: the first command starts it, later ones are served, it stops by
itself once no workspace of its user is in use.

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
from test_server import DEADLINE, Running, args_of, ee, static_arm, wait_for

from ee.serve import client, protocol
from ee.workspace import Workspace

ON_DEMAND = b"ee.serve.server"


@pytest.fixture
def store(ws: Workspace) -> Workspace:
    (ws.root / "memories/a.md").write_text("---\nid: mem_a\ntags: [ci]\n---\nalpha rollback window\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a memory")
    return ws


def served_pid() -> int:
    """The pid of the user's server, once it listens (waits for it)."""
    wait_for(
        lambda: (client.server_pid() or 0) > 0 and (protocol.runtime_dir() / protocol.SOCKET).exists(),
        "the server",
    )
    pid = client.server_pid()
    assert pid is not None
    return pid


def log_lines(text: str) -> list[str]:
    log = protocol.runtime_dir() / protocol.LOG
    return [line for line in log.read_text().splitlines() if text in line]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def _cmdline_has(pid: int, *words: bytes) -> bool:
    try:
        parts = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return all(word in parts for word in words)


def _environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def test_the_first_command_answers_and_starts_the_server_the_next_is_served(
    store: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = store.root
    try:
        first = ee("search", "alpha", "--json", cwd=root, served=True)
        assert first.returncode == 0
        assert [h["id"] for h in json.loads(first.stdout)["data"]["hits"]] == ["mem_a"]
        pid = served_pid()
        assert _cmdline_has(pid, ON_DEMAND, b"--on-demand")
        assert os.getsid(pid) == pid != os.getsid(0)  # detached: its own session (and process group)
        assert os.getpgid(pid) == pid
        monkeypatch.delenv("EE_NO_SERVER")
        wait_for(lambda: client.call("search", root, args_of("alpha")) is not None, "a served answer")
        assert ee("search", "alpha", "--json", cwd=root, served=True).stdout == first.stdout
        assert log_lines(f"watching {root}")  # it logs to the runtime folder's serve.log
    finally:
        assert stop_server()


def test_ten_commands_at_once_start_one_server(store: Workspace) -> None:
    root = store.root
    static_arm(root)  # (the server may finish the transformer's vectors between two of the ten answers)
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
        served_pid()
        # every command that found no server was free to start one: only one did
        assert len(log_lines("listening on")) == 1
        assert log_lines("already running") == []
        ours = f"XDG_RUNTIME_DIR={os.environ['XDG_RUNTIME_DIR']}".encode()  # (this test's servers only)
        running = [
            pid
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
            if _cmdline_has(pid, ON_DEMAND) and ours in _environ(pid)
        ]
        assert len(running) == 1
    finally:
        assert stop_server()


def test_one_server_serves_every_workspace_of_its_user(store: Workspace, tmp_path: Path) -> None:
    from conftest import make_repo

    other = make_repo(tmp_path / "other")
    Workspace.init(other)
    (other / "memories/b.md").write_text("---\nid: mem_b\n---\nalpha other window\n")
    for root in (store.root, other):  # every answer is compared with one taken in-process
        static_arm(root)
    try:
        assert ee("search", "alpha", cwd=store.root, served=True).returncode == 0
        pid = served_pid()
        for root in (store.root, other, store.root):
            local = ee("search", "alpha", "--json", cwd=root, served=False)
            assert ee("search", "alpha", "--json", cwd=root, served=True).stdout == local.stdout
        assert client.server_pid() == pid  # the same server for both
        wait_for(lambda: log_lines(f"watching {other}"), "the second workspace to be served")
    finally:
        assert stop_server()


def test_a_killed_server_never_blocks_a_command_and_is_replaced(store: Workspace) -> None:
    root = store.root
    try:
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        pid = served_pid()
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), "the server to die")
        assert (protocol.runtime_dir() / protocol.SOCKET).exists()  # stale
        after = ee("search", "alpha", "--json", cwd=root, served=True)
        assert after.returncode == 0
        assert after.stderr == b""
        assert after.stdout == ee("search", "alpha", "--json", cwd=root, served=False).stdout
        wait_for(lambda: client.server_pid() not in (None, pid), "a new server")
    finally:
        assert stop_server()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pid_file_that_is_not_a_file_never_blocks_a_command(store: Workspace, kind: str) -> None:
    """``serve.pid`` a FIFO must not block a command that starts a server (or a warm git hook) in its
    open; a link to a device must not be written to. The server replaces it with a file."""
    root = store.root
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    pid_file = folder / protocol.PID_FILE
    if kind == "fifo":
        os.mkfifo(pid_file)
    else:
        pid_file.symlink_to("/dev/null")
    try:
        first = ee("search", "alpha", "--json", cwd=root, served=True)  # (DEADLINE guards a hang)
        assert first.returncode == 0, first.stderr
        served_pid()
        assert pid_file.is_file()
        assert not pid_file.is_symlink()
        assert ee("search", "alpha", "--json", cwd=root, served=True).stdout == first.stdout
    finally:
        assert stop_server()


def test_a_log_that_is_a_fifo_never_blocks_a_command(store: Workspace) -> None:
    root = store.root
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    os.mkfifo(folder / protocol.LOG)
    first = ee("search", "alpha", "--json", cwd=root, served=True)  # (DEADLINE guards a hang)
    assert first.returncode == 0, first.stderr
    assert first.stdout == ee("search", "alpha", "--json", cwd=root, served=False).stdout
    assert client.server_pid() is None  # no server started with nowhere to log


def test_the_server_stops_when_idle(store: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    root = store.root
    (root / ".ee/config.toml").write_text("[server]\nidle_timeout = 1\n")
    monkeypatch.delenv("EE_NO_SERVER")
    try:
        assert client.call("search", root, args_of("alpha")) is None  # starts it
        pid = served_pid()
        client.call("search", root, args_of("alpha"))  # opens the workspace (or the server is gone)
        wait_for(lambda: not alive(pid), "the idle server to stop")
        assert log_lines("no workspace open: stopping")
        assert not (protocol.runtime_dir() / protocol.SOCKET).exists()
    finally:
        stop_server()


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_a_workspace_that_disappears_is_closed(
    store: Workspace, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = store.root
    monkeypatch.delenv("EE_NO_SERVER")
    try:
        client.call("search", root, args_of("alpha"))
        pid = served_pid()
        wait_for(lambda: client.call("search", root, args_of("alpha")) is not None, "the workspace served")
        if how == "deleted":
            shutil.rmtree(root)
        else:
            root.rename(tmp_path / "moved")
        wait_for(lambda: log_lines(f"{root} is gone: closing it"), "the workspace to be closed")
        wait_for(lambda: not alive(pid), "the server to stop")  # (no other workspace open)
    finally:
        stop_server()


def test_no_server_is_started_when_turned_off(store: Workspace) -> None:
    root = store.root
    assert ee("search", "alpha", cwd=root, served=False).returncode == 0  # EE_NO_SERVER=1
    (root / ".ee/config.toml").write_text("[server]\nautostart = false\n")
    assert ee("search", "alpha", cwd=root, served=True).returncode == 0
    assert ee("remember", "a fact", cwd=root, served=True).returncode == 0
    assert client.server_pid() is None
    assert not (protocol.runtime_dir() / protocol.LOG).exists()


def test_a_foreground_watch_is_used_and_never_doubled(store: Workspace, tmp_path: Path) -> None:
    root = store.root
    running = Running(root, tmp_path / "watch.log")
    try:
        assert served_pid() == running.proc.pid
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
        assert not (protocol.runtime_dir() / protocol.LOG).exists()  # nothing was started on demand
        second = ee("watch", cwd=root, served=True)
        assert second.returncode == 8
        assert f"ee's server is already running (pid {running.proc.pid})".encode() in second.stderr
        assert json.loads(second.stdout)["error"]["code"] == "conflict"
    finally:
        assert running.stop() == 0
    assert running.log.rstrip().endswith("stopped")
    assert not (protocol.runtime_dir() / protocol.SOCKET).exists()
    assert not (protocol.runtime_dir() / protocol.PID_FILE).exists()


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
        pid = served_pid()
        # git gave the hook its index file (and may give it GIT_DIR): the server outlives the hook, so it
        # must find its repository by itself.
        names = {item.split(b"=")[0] for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")}
        assert not names & {b"GIT_INDEX_FILE", b"GIT_DIR", b"GIT_PREFIX", b"GIT_EDITOR"}
        assert ee("search", "alpha", cwd=root, served=True).returncode == 0
    finally:
        assert stop_server()


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
    assert client.server_pid() is None
