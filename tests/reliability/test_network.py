"""Nothing listens on the network: a search, a context pack and `ee watch` with its warm query server own no
TCP or UDP socket (inodes of /proc/<pid>/fd matched against /proc/net/{tcp,tcp6,udp,udp6}); the server's
Unix socket is readable and writable by its owner only (0600).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .harness import child_env, ee_args, ee_commands, new_workspace

NET_TABLES = ("tcp", "tcp6", "udp", "udp6")


def socket_inodes(pid: int | str) -> set[str]:
    out = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def inet_sockets(inodes: set[str]) -> list[str]:
    """The TCP/UDP sockets (IPv4 and IPv6, any state, listening included) among ``inodes``."""
    found = []
    for table in NET_TABLES:
        path = Path(f"/proc/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                found.append(f"{table} local {fields[1]} state {fields[3]}")
    return found


_PROBE = textwrap.dedent(
    """
    import json, os, sys
    from ee.cli import main
    code = main(sys.argv[1:])
    sockets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.append(target[8:-1])
    print("\\n" + json.dumps({"code": code, "sockets": sockets}), file=sys.stderr)
    """
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    new_workspace(root, shared=3)
    return root


@pytest.mark.parametrize("command", [("search", "shared memory", "--json"), ("context", "shared", "--json")])
def test_a_query_process_opens_no_network_socket(root: Path, command: tuple[str, ...]) -> None:
    """The sockets a search or context process holds at its end (the model and index loaded, the answer
    printed) are none, or Unix sockets only."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "--workspace", str(root), *command],
        cwd=root,
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
        check=False,
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr[-2000:]
    assert inet_sockets(set(report["sockets"])) == []


@pytest.mark.skipif("watch" not in ee_commands(), reason="this build has no `ee watch`")
def test_the_watcher_and_its_query_server_listen_on_a_private_unix_socket_only(root: Path) -> None:
    env = child_env()
    env.pop("EE_NO_SERVER", None)
    watcher = subprocess.Popen(
        ee_args(root, "watch"),
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    from ee.serve.protocol import SOCKET, runtime_dir

    sock = runtime_dir() / SOCKET  # (the user's runtime folder: this test's, from conftest)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline and watcher.poll() is None:
            time.sleep(0.1)
        assert sock.exists(), "the watcher did not start its server"
        mode = sock.stat().st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600, oct(stat.S_IMODE(mode))
        # a query answered by the warm server, then the sockets of both processes
        client = subprocess.run(
            ee_args(root, "search", "shared memory", "--json"),
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert client.returncode == 0, client.stderr
        assert json.loads(client.stdout)["data"]["hits"]
        inodes = socket_inodes(watcher.pid)
        for child in _children(watcher.pid):
            inodes |= socket_inodes(child)
        assert inodes, "the server holds its listening socket"
        assert inet_sockets(inodes) == []
        unix = [
            line
            for line in Path("/proc/net/unix").read_text().splitlines()[1:]
            if line.split()[6] in inodes and line.split()[5] == "01"
        ]  # 01: listening (unconnected)
        # (bound under a temporary name in the runtime folder, then renamed into place: /proc shows the
        # bound name)
        assert unix
        assert all(f"{sock.parent}/" in line for line in unix), unix
    finally:
        watcher.send_signal(signal.SIGTERM)
        try:
            watcher.wait(timeout=20)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()
    assert not sock.exists(), "the socket file is removed when the watcher stops"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out
