"""The client talks only to a server of its own user, and a served write sends only what its commit reads.

The checks are tested through their decision functions, and end to end where the machine allows it: the
tests run as root, so a socket file or a listening process of another user (``nobody``, uid 65534) is
made by ``chown`` and by a child process started with ``user=65534``.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git
from test_server import DEADLINE, ee, start_watcher, stop

from ee.serve import client
from ee.serve import server as ee_server
from ee.serve.server import _environment
from ee.serve.watch import watcher_pid
from ee.workspace import Workspace

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")


@pytest.fixture
def store(ws: Workspace) -> Workspace:
    (ws.root / "memories/a.md").write_text("---\nid: mem_a\n---\nalpha rollback window\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a memory")
    return ws


def python_for_nobody() -> str:
    """A Python interpreter the user ``nobody`` may run (a virtualenv under /root is out of its reach)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            subprocess.run([candidate, "-c", "pass"], user=NOBODY, check=True, timeout=DEADLINE)
        except (OSError, subprocess.CalledProcessError):
            continue
        return candidate
    pytest.skip("no Python that the user nobody may run")


def _stat(mode: int, uid: int) -> os.stat_result:
    return os.stat_result((mode, 1, 1, 1, uid, 0, 0, 0, 0, 0))


# ------------------------------------------------------------------------------------------ decisions


def test_the_state_folder_decision() -> None:
    me = os.geteuid()
    assert client.state_dir_problem(_stat(stat.S_IFDIR | 0o755, me), me) is None
    assert client.state_dir_problem(_stat(stat.S_IFDIR | 0o700, me), me) is None
    assert client.state_dir_problem(_stat(stat.S_IFDIR | 0o1777, me), me) is None  # sticky: others can't swap
    assert "belongs to uid 1234" in str(client.state_dir_problem(_stat(stat.S_IFDIR | 0o755, 1234), me))
    assert "writable by other users (mode 0777)" in str(
        client.state_dir_problem(_stat(stat.S_IFDIR | 0o777, me), me)
    )
    assert "writable" in str(client.state_dir_problem(_stat(stat.S_IFDIR | 0o775, me), me))
    assert "writable" in str(client.state_dir_problem(_stat(stat.S_IFDIR | 0o757, me), me))
    assert client.state_dir_problem(_stat(stat.S_IFREG | 0o755, me), me) == "is not a folder"


def test_the_socket_and_peer_decisions() -> None:
    me = os.geteuid()
    assert client.socket_problem(_stat(stat.S_IFSOCK | 0o600, me), me) is None
    assert "belongs to uid 1234" in str(client.socket_problem(_stat(stat.S_IFSOCK | 0o600, 1234), me))
    assert client.socket_problem(_stat(stat.S_IFREG | 0o600, me), me) == "is not a socket"
    assert "belongs to uid 1234" in str(client.socket_problem(_stat(stat.S_IFREG | 0o600, 1234), me))
    assert client.peer_problem(me, me) is None
    assert "served by uid 1234" in str(client.peer_problem(1234, me))


def test_the_peer_of_a_connection_is_read_from_the_kernel() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert client.peer_uid(a) == os.geteuid()


def test_a_served_write_passes_only_what_its_commit_reads() -> None:
    environ = {
        "SECRET_TOKEN": "x",
        "GITHUB_TOKEN": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "OPENAI_API_KEY": "z",
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_EMAIL": "c@example.com",
        "GIT_CONFIG_GLOBAL": "/home/x/.gitconfig",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "B",
        "EMAIL": "e@example.com",
        "HOME": "/home/x",
        "PATH": "/usr/bin",
        "TZ": "Europe/Paris",
        "EE_AGENT": "codex",
        "COLUMNS": "80",
    }
    write = client.passed_environment(environ, write=True)
    assert set(write) == set(environ) - {
        "SECRET_TOKEN",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
    }
    assert set(client.passed_environment(environ, write=False)) == {"EE_AGENT", "COLUMNS"}
    # The server applies no other variable either, whatever a client sends.
    applied = _environment(environ, write=True)
    assert "SECRET_TOKEN" not in applied
    assert applied["GIT_AUTHOR_NAME"] == "A"


# ------------------------------------------------------------------------------------------ end to end


class FakeServer:
    """A listener on ``.ee/serve.sock`` that records what clients send and answers ``{"code": 0}``."""

    def __init__(self, root: Path) -> None:
        self.path = root / ".ee/serve.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(8)
        self.sock.settimeout(DEADLINE)
        self.requests: list[bytes] = []
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.connections += 1
                try:
                    self.requests.append(client.recv_frame(conn))
                except (OSError, ValueError):
                    continue
                for frame in (b'{"code": 0}', b"", b""):
                    client.send_frame(conn, frame)

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # (wakes the accept)
        self.sock.close()
        self.thread.join(timeout=DEADLINE)


@pytest.fixture
def fake(store: Workspace) -> Iterator[FakeServer]:
    server = FakeServer(store.root)
    yield server
    server.close()


def test_a_served_write_never_sends_unrelated_variables(store: Workspace, fake: FakeServer) -> None:
    result = ee(
        "remember",
        "a fact",
        cwd=store.root,
        served=True,
        SECRET_TOKEN="hunter2-secret-value",
        GIT_AUTHOR_NAME="Client Author",
        TZ="Europe/Paris",
    )
    assert result.returncode == 0, result.stderr  # "answered" by the fake server
    [raw] = fake.requests
    assert b"SECRET_TOKEN" not in raw
    assert b"hunter2-secret-value" not in raw
    env = json.loads(raw)["env"]
    assert env["GIT_AUTHOR_NAME"] == "Client Author"
    assert env["TZ"] == "Europe/Paris"
    assert "HOME" in env
    assert set(env) <= {name for name in os.environ if client.is_passed(name, write=True)} | {
        "GIT_AUTHOR_NAME",
        "TZ",
    }
    assert "SECRET_TOKEN" not in json.loads(raw)


def test_a_served_read_sends_only_ee_settings(store: Workspace, fake: FakeServer) -> None:
    result = ee("search", "alpha", cwd=store.root, served=True, SECRET_TOKEN="x", EE_FORMAT="json")
    assert result.returncode == 0
    [raw] = fake.requests
    assert set(json.loads(raw)["env"]) == {"EE_FORMAT"} | {
        name for name in os.environ if name.startswith("EE_") and name != "EE_NO_SERVER"
    }


def _in_process(store: Workspace) -> subprocess.CompletedProcess[bytes]:
    return ee("search", "alpha", "--json", cwd=store.root, served=False)


@as_root
def test_a_socket_file_of_another_user_is_ignored(store: Workspace, fake: FakeServer) -> None:
    os.chown(fake.path, NOBODY, NOBODY)
    result = ee("search", "alpha", "--json", cwd=store.root, served=True)
    assert result.returncode == 0
    assert result.stdout == _in_process(store).stdout  # run here, with the in-process answer
    assert b"ee: warning:" in result.stderr
    assert b"belongs to uid 65534" in result.stderr
    assert fake.connections == 0  # never even connected
    assert watcher_pid(store.root) is None  # and nothing started in its place


STRANGER = """
import socket, sys
listener = socket.socket(fileno=int(sys.argv[2]))
listener.listen(8)  # (the peer credentials a client sees are the listener's at listen() time)
listener.settimeout(float(sys.argv[1]))
print("listening", flush=True)
try:
    conn, _ = listener.accept()
except TimeoutError:
    print("no connection", flush=True)
    raise SystemExit
conn.settimeout(5)
got = b""
while True:
    chunk = conn.recv(65536)
    if not chunk:
        break
    got += chunk
print("received", len(got), flush=True)
"""


@as_root
def test_a_server_of_another_user_is_refused_with_nothing_sent(store: Workspace) -> None:
    path = store.root / ".ee/serve.sock"
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(path))  # a socket file of ours ...
    stranger = subprocess.Popen(  # ... served by nobody
        [python_for_nobody(), "-c", STRANGER, str(DEADLINE), str(bound.fileno())],
        pass_fds=(bound.fileno(),),
        stdout=subprocess.PIPE,
        user=NOBODY,
    )
    try:
        assert stranger.stdout is not None
        assert stranger.stdout.readline() == b"listening\n"
        result = ee("search", "alpha", "--json", cwd=store.root, served=True)
        assert result.returncode == 0
        assert result.stdout == _in_process(store).stdout
        assert b"served by uid 65534" in result.stderr
        out, _ = stranger.communicate(timeout=DEADLINE)
        assert out == b"received 0\n"  # it connected, checked, and sent nothing
    finally:
        bound.close()
        if stranger.poll() is None:
            stranger.kill()
            stranger.wait()
    assert watcher_pid(store.root) is None


# A client of another user: it connects, sends a request, and reads whatever comes back until the server
# closes. The server may refuse before the request is sent (it checks the peer as soon as it accepts), so a
# send that finds the connection closed is part of a refusal, not a failure of the probe.
PROBE = """
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
data = sys.argv[2].encode()
try:
    s.sendall(struct.pack('>I', len(data)) + data)
except (BrokenPipeError, ConnectionResetError):
    pass
got = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        break
    if not chunk:
        break
    got += chunk
print(len(got))
"""


def probe_as_nobody(state_dir: Path) -> subprocess.CompletedProcess[bytes]:
    """:data:`PROBE` run as user nobody against ``state_dir``'s socket (reached through a descriptor this
    process holds, since nobody cannot open the folder), sending a request for ``ee search alpha``."""
    request = {"protocol": client.PROTOCOL, "version": client._version(), "argv": ["search", "alpha"]}
    folder = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return subprocess.run(
            [python_for_nobody(), "-c", PROBE, f"/proc/self/fd/{folder}/serve.sock", json.dumps(request)],
            pass_fds=(folder,),
            capture_output=True,
            user=NOBODY,
            timeout=DEADLINE,
            check=False,
        )
    finally:
        os.close(folder)


@as_root
def test_the_server_refuses_a_client_of_another_user(store: Workspace, tmp_path: Path) -> None:
    with (tmp_path / "watch.log").open("wb") as log:
        proc = start_watcher(store, log=log)
    try:
        path = store.root / ".ee/serve.sock"
        os.chmod(path, 0o666)  # (as if its mode were lost: the peer check is the second lock)
        out = probe_as_nobody(store.root / ".ee")
        assert (out.returncode, out.stderr) == (0, b"")
        assert out.stdout == b"0\n"  # closed without an answer, not even a fallback
    finally:
        stop(proc)
    assert "serve: refused a client of uid 65534" in (tmp_path / "watch.log").read_text()


@as_root
def test_a_busy_server_tells_a_stranger_nothing(
    store: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With every client slot taken, a client of its own user is told to run in-process; one of another
    user gets nothing at all, not even that (it used to get the fallback answer before its check)."""
    monkeypatch.setattr(ee_server, "MAX_CLIENTS", 0)  # (every slot taken, without 32 held connections)
    logged: list[str] = []
    server = ee_server.Server(store.root, log=logged.append)
    server.start(warm=False)
    try:
        os.chmod(server.path, 0o666)  # (as if its mode were lost: the peer check is the second lock)
        with socket.socket(socket.AF_UNIX) as own:
            own.settimeout(DEADLINE)
            own.connect(str(server.path))
            assert json.loads(client.recv_frame(own)) == {"fallback": True}
        out = probe_as_nobody(server.path.parent)  # (through a descriptor: tmp_path is root's alone)
        assert (out.returncode, out.stderr) == (0, b"")
        assert out.stdout == b"0\n"
    finally:
        server.close()
    assert logged == ["serve: refused a client of uid 65534"]


@as_root
def test_a_state_folder_others_can_write_is_not_used(store: Workspace) -> None:
    os.chmod(store.root / ".ee", 0o777)
    result = ee("search", "alpha", "--json", cwd=store.root, served=True)
    assert result.returncode == 0
    assert result.stdout == _in_process(store).stdout
    assert b"is writable by other users (mode 0777)" in result.stderr
    assert b"chmod go-w" in result.stderr
    assert watcher_pid(store.root) is None
    assert not (store.root / ".ee/serve.log").exists()  # no server started there


@as_root
def test_a_state_folder_of_another_user_is_not_used(store: Workspace) -> None:
    os.chown(store.root / ".ee", NOBODY, NOBODY)
    result = ee("search", "alpha", "--json", cwd=store.root, served=True)
    assert result.returncode == 0
    assert b"belongs to uid 65534" in result.stderr
    assert not (store.root / ".ee/serve.log").exists()
