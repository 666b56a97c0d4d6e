"""The per-user warm server: library operations answered as in-process, for every workspace of its user,
never one workspace's memories in another's answer, and clean fallbacks for a stale, a foreign or an older
server.

The tests run real ``ee`` processes and a real server (``ee watch``, or one started on demand); each test
has its own runtime folder (``XDG_RUNTIME_DIR``, set by conftest), so its server is its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import git, make_repo, stop_server

from ee.operations import OPERATIONS, run
from ee.query.document import from_arguments
from ee.serve import client, protocol
from ee.serve import server as ee_server
from ee.workspace import Workspace

DEADLINE = 60.0
QUERY = '{"version": "ee.query.v1", "query": {"text": "alpha"}}'
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")


def wait_for(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def ee(
    *args: str, cwd: Path, served: bool, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``python -m ee ARGS`` as a real process; ``served`` lets it use the server (else EE_NO_SERVER=1)."""
    full = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"} | env
    if not served:
        full["EE_NO_SERVER"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "ee", *args],
        cwd=cwd,
        input=stdin.encode() if stdin is not None else None,
        capture_output=True,
        env=full,
        timeout=DEADLINE,
        check=False,
    )


def add_memories(root: Path, memories: dict[str, str]) -> None:
    for name, body in memories.items():
        (root / f"memories/{name}.md").write_text(f"---\nid: mem_{name}\ntags: [ci]\n---\n{body}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "memories")


def static_arm(root: Path) -> None:
    """Turn the transformer arm off in ``root``: the server computes its vectors when idle and then answers
    with it, so an answer would change arm between a served and an in-process query without the store
    changing (tests/test_transformer.py checks served and in-process answers once the vectors are
    complete)."""
    (root / ".ee/config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")


def args_of(text: str) -> dict[str, Any]:
    return {"query": from_arguments(text).doc, "min_relevance": None}


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test process may use the server (conftest turns it off everywhere else)."""
    monkeypatch.delenv("EE_NO_SERVER", raising=False)


class Running:
    """A server in the foreground (``ee watch`` in ``root``) and its log."""

    def __init__(self, root: Path, log: Path) -> None:
        self.log_path = log
        with log.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ee", "--workspace", str(root), "watch"],
                stdout=subprocess.DEVNULL,
                stderr=sink,
                env={k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"},
            )
        wait_for(lambda: f"watching {root}" in self.log or self.proc.poll() is not None, "the server")
        assert self.proc.poll() is None, self.log

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=DEADLINE)


def start_watcher(ws: Workspace) -> subprocess.Popen[bytes]:
    """``ee watch`` in ``ws`` (the user's server in the foreground), once it serves ``ws``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(ws.root), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"},
    )
    wait_for(lambda: client.server_pid() == proc.pid or proc.poll() is not None, "the server")
    assert proc.poll() is None
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=DEADLINE)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[Path], Running]]:
    started: list[Running] = []

    def starter(root: Path) -> Running:
        started.append(Running(root, tmp_path / f"server-{len(started)}.log"))
        return started[-1]

    yield starter
    for running in started:
        running.stop()


@pytest.fixture
def served_ws(ws: Workspace, start: Callable[[Path], Running]) -> Workspace:
    """A workspace with three memories and the user's server running (opened on it), the transformer arm
    off (:func:`static_arm`)."""
    static_arm(ws.root)
    add_memories(ws.root, {"a": "alpha rollback window", "b": "alpha bravo", "c": "charlie"})
    start(ws.root)
    return ws


# ------------------------------------------------------------------------------------------ same bytes


@pytest.mark.parametrize(
    "args",
    [
        ["search", "alpha", "--json"],
        ["search", "alpha rollback", "--mode", "lexical", "--json"],
        ["search", "alpha", "--explain", "--json"],
        ["search", "alpha", "--human"],
        ["search", "alpha", "--format", "toon"],
        ["search", "alpha", "--format", "jsonl"],
        ["search", "alpha", "--format", "compact"],
        ["search", "alpha", "--format", "markdown"],
        ["search", "alpha", "--format", "hook"],
        ["search", "--query-file", "-", "--json"],
        ["context", "alpha rollback", "--json"],
        ["context", "alpha rollback", "--explain", "--json"],
        ["context", "alpha rollback", "--format", "markdown"],
        ["context", "alpha rollback", "--human"],
        ["context", "alpha rollback", "--format", "hook"],
        # (as of a commit: a why's reference time is otherwise the second it runs at)
        ["why", "mem_a", "--as-of", "HEAD", "--json"],
        ["why", "mem_a", "alpha rollback", "--as-of", "HEAD", "--json"],
        ["why", "mem_a", "alpha", "--as-of", "HEAD", "--human"],
        ["why", "mem_nope", "--json"],  # an error: the server lets the command report it, same bytes
        ["memory", "show", "mem_a", "--json"],
        ["memory", "show", "mem_a", "--human"],
        ["memory", "show", "mem_a", "--as-of", "HEAD", "--json"],
        ["memory", "show", "mem_a", "--as-of", "HEAD", "--human"],
        ["memory", "show", "mem_nope", "--human"],
        ["memory", "list", "--json"],
        ["memory", "list", "--human"],
        ["memory", "list", "--tag", "ci", "--trust", "human_explicit", "--limit", "2", "--human"],
        ["memory", "list", "--since", "2000-01-01T00:00:00Z", "--json"],
        ["memory", "list", "--since", "yesterday", "--json"],  # a usage error, reported the same
        ["memory", "list", "--quarantined", "--human"],
    ],
    ids=lambda args: " ".join(args),
)
def test_served_output_is_byte_identical_to_in_process(served_ws: Workspace, args: list[str]) -> None:
    stdin = QUERY if "-" in args else None
    served = ee(*args, cwd=served_ws.root, served=True, stdin=stdin)
    local = ee(*args, cwd=served_ws.root, served=False, stdin=stdin)
    assert (served.returncode, served.stdout, served.stderr) == (local.returncode, local.stdout, local.stderr)


# Arguments for each operation (a new operation must be added here: the test below fails until it is).
SAMPLES: dict[str, dict[str, Any]] = {
    "search": args_of("alpha"),
    "context": {"query": from_arguments("alpha rollback").doc, "quotas": None, "min_relevance": None},
    "why": {"memory_id": "mem_a", "query_text": "alpha", "as_of": "HEAD", "profile": None},
    "memory_show": {"memory_id": "mem_a", "as_of": None},
    "memory_list": {"tags": ["ci"], "limit": 2, "agent": None, "trust": None, "quarantined": False},
    "memory_history": {"memory_id": "mem_a"},
    "hook_check": {"name": "prepare-commit-msg", "paths": ["src/alpha.py"], "added": "alpha_rollback()\n"},
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_operation_is_served_with_the_in_process_result(
    served_ws: Workspace, op: str, client_env: None
) -> None:
    assert op in SAMPLES, f"add sample arguments for {op}"
    served = client.call(op, served_ws.root, SAMPLES[op])
    assert served is not None  # really served, not a fallback
    local = run(Workspace(served_ws.root), op, SAMPLES[op])
    assert served == json.loads(json.dumps(local))


def test_the_client_prepares_while_the_server_computes(
    served_ws: Workspace, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``meanwhile`` (what the command line needs for any answer: its result types) runs once per served
    request, after it is sent, and changes nothing of the answer; with nothing sent it does not run."""
    ran: list[str] = []
    answered = client.call("context", served_ws.root, SAMPLES["context"], meanwhile=lambda: ran.append("x"))
    assert ran == ["x"]
    assert answered == client.call("context", served_ws.root, SAMPLES["context"])
    monkeypatch.setenv("EE_NO_SERVER", "1")
    assert client.call("search", served_ws.root, args_of("alpha"), meanwhile=lambda: ran.append("y")) is None
    assert ran == ["x"]


def test_an_edit_is_seen_by_the_next_served_query(served_ws: Workspace, client_env: None) -> None:
    """The freshness proof (ee.serve.watch): a write that finished before the request is in the answer,
    whatever the watcher was told yet."""
    for round_ in range(5):
        (served_ws.root / f"memories/new{round_}.md").write_text(
            f"---\nid: mem_new{round_}\n---\nalpha {round_}\n"
        )
        hits = client.call("search", served_ws.root, args_of("alpha"))["hits"]
        assert f"mem_new{round_}" in {hit["id"] for hit in hits}
    (served_ws.root / "memories/new0.md").unlink()
    hits = client.call("search", served_ws.root, args_of("alpha"))["hits"]
    assert "mem_new0" not in {hit["id"] for hit in hits}


def test_a_repair_is_reported_once_as_in_process(served_ws: Workspace, client_env: None) -> None:
    """The answer whose request repaired the index says so; the next ones, from the view the server
    kept, say nothing of it, as a command run in-process then says nothing (the same bytes)."""
    assert client.call("search", served_ws.root, args_of("alpha"))["degraded"] == []
    (served_ws.root / ".ee/index/manifest.json").write_text("{damaged", encoding="utf-8")
    repaired = client.call("search", served_ws.root, args_of("alpha"))["degraded"]
    assert [d["code"] for d in repaired] == ["index_repaired"]
    for _ in range(2):
        served = ee("search", "alpha", "--json", cwd=served_ws.root, served=True)
        local = ee("search", "alpha", "--json", cwd=served_ws.root, served=False)
        assert json.loads(served.stdout)["degraded"] == []
        assert served.stdout == local.stdout


# ------------------------------------------------------------------------------------------ workspaces


def test_two_workspaces_with_concurrent_clients_never_leak(
    tmp_path: Path, start: Callable[[Path], Running]
) -> None:
    roots = {}
    for name in ("one", "two"):
        root = make_repo(tmp_path / name)
        Workspace.init(root)
        static_arm(root)  # every answer below is compared with one taken before the server went idle
        add_memories(root, {f"{name}{i}": f"alpha shared words {name} number {i}" for i in range(3)})
        roots[name] = root
    start(roots["one"])
    expected = {name: ee("search", "alpha", "--json", cwd=root, served=False) for name, root in roots.items()}
    for name, result in expected.items():
        ids = {hit["id"] for hit in json.loads(result.stdout)["data"]["hits"]}
        assert ids == {f"mem_{name}{i}" for i in range(3)}
    order = ["one", "two"] * 8
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(
            pool.map(lambda n: (n, ee("search", "alpha", "--json", cwd=roots[n], served=True)), order)
        )
    for name, result in results:
        assert result.stdout == expected[name].stdout


def test_workspaces_open_lazily_and_the_least_recently_used_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound on open workspaces (each holds its generation and a watcher), in a server of this
    process answering requests directly."""
    monkeypatch.setattr(ee_server, "MAX_WORKSPACES", 2)
    server = ee_server.Server(log=lambda line: None, watch=False)
    roots = []
    for i in range(3):
        root = make_repo(tmp_path / f"w{i}")
        Workspace.init(root)
        add_memories(root, {f"m{i}": f"alpha {i}"})
        roots.append(str(root))
    assert server.open == {}
    # (a library's first import may set a variable of its own, e.g. KMP_INIT_AT_FORK: not a request's)
    run(Workspace(Path(roots[0])), "search", args_of("alpha"))
    cwd, mask, env = os.getcwd(), os.umask(0o022), dict(os.environ)
    os.umask(mask)
    try:
        for root in (*roots, roots[0]):
            answer = server.answer(request("search", root, args_of("alpha")))
            assert [hit["id"] for hit in answer["result"]["hits"]] == [f"mem_m{roots.index(root)}"]
        assert list(server.open) == [roots[2], roots[0]]  # w1 was the least recently used
        # nothing process-wide was changed by the requests
        assert (os.getcwd(), os.umask(mask), dict(os.environ)) == (cwd, mask, env)
    finally:
        os.umask(mask)
        server.close()
    assert server.open == {}


def request(op: str, root: str | Path, args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {
        "protocol": protocol.PROTOCOL,
        "ee": protocol.identity(),
        "op": op,
        "workspace": str(root),
        "args": args,
        "model": None,
    } | changes


def test_a_request_of_the_wrong_shape_is_told_to_run_in_process(ws: Workspace) -> None:
    add_memories(ws.root, {"a": "alpha"})
    server = ee_server.Server(log=lambda line: None, watch=False, stay=True)
    root = str(ws.root)
    good = args_of("alpha")
    try:
        for bad, why in (
            ([], "protocol"),
            (request("search", root, good, protocol=2), "protocol"),
            (request("search", root, good, ee={"version": "0.0.1", "package": "/elsewhere"}), "version"),
            (request("remember", root, {"text": "x"}), "operation"),
            (request("nope", root, {}), "operation"),
            (request("search", root, {"text": "alpha"}), "arguments"),
            (request("search", root, {"query": {"query": {}}, "min_relevance": None}), "query"),
            (request("search", "relative/path", good), "workspace"),
            (request("search", root + "/../" + ws.root.name, good), "workspace"),
            (request("search", str(ws.root.parent), good), "workspace"),  # not a workspace
            (request("search", root, good, model="/some/other/model"), "model"),
            (request("hook_check", root, {"name": "post-merge", "paths": [], "added": ""}), "error"),
            (request("hook_check", root, {"name": "pre-commit", "paths": "x", "added": ""}), "error"),
            (request("hook_check", root, {"name": "pre-commit", "changes": []}), "arguments"),
            (request("why", root, {"memory_id": "mem_nope"}), "error"),  # the command reports it
        ):
            assert server.answer(bad) == {"fallback": why}, bad
        assert "result" in server.answer(request("search", root, good))
    finally:
        server.close()


# ------------------------------------------------------------------------------------------ the place


def test_the_folder_and_socket_are_private_to_their_owner(served_ws: Workspace) -> None:
    folder = protocol.runtime_dir()
    assert stat.S_IMODE(folder.lstat().st_mode) == 0o700
    sock = (folder / protocol.SOCKET).lstat()
    assert stat.S_ISSOCK(sock.st_mode)
    assert stat.S_IMODE(sock.st_mode) == 0o600
    assert not (served_ws.root / ".ee/serve.sock").exists()  # one socket per user, none per workspace


def test_without_a_runtime_folder_the_temporary_folder_holds_one_named_by_uid(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert protocol.runtime_dir() == tmp_path / f"ee-{os.geteuid()}"


def test_the_runtime_folder_decision() -> None:
    uid = os.geteuid()

    def stat_of(mode: int, owner: int = uid) -> os.stat_result:
        return os.stat_result((mode, 1, 1, 1, owner, 0, 0, 0, 0, 0))

    assert protocol.folder_problem(stat_of(stat.S_IFDIR | 0o700), uid) is None
    assert "open to other users" in str(protocol.folder_problem(stat_of(stat.S_IFDIR | 0o755), uid))
    assert "belongs to uid" in str(protocol.folder_problem(stat_of(stat.S_IFDIR | 0o700, uid + 1), uid))
    assert "symbolic link" in str(protocol.folder_problem(stat_of(stat.S_IFLNK | 0o777), uid))
    assert "not a folder" in str(protocol.folder_problem(stat_of(stat.S_IFREG | 0o600), uid))
    assert protocol.socket_problem(stat_of(stat.S_IFSOCK | 0o600), uid) is None
    assert protocol.socket_problem(stat_of(stat.S_IFREG | 0o600), uid) == "is not a socket"
    assert protocol.peer_problem(uid, uid) is None
    assert protocol.peer_problem(uid + 1, uid) is not None


# ------------------------------------------------------------------------------------------ fallbacks


def in_process(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return ee(*args, cwd=root, served=False)


def test_a_stale_socket_falls_back_and_is_replaced(ws: Workspace, client_env: None) -> None:
    add_memories(ws.root, {"a": "alpha"})
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(folder / protocol.SOCKET))
    dead.close()  # the file stays, nobody listens: connection refused
    result = ee("search", "alpha", "--json", cwd=ws.root, served=True)  # falls back, starts a server
    assert (result.returncode, result.stdout) == (0, in_process(ws.root, "search", "alpha", "--json").stdout)
    assert result.stderr == b""  # (a stale socket of ours is no warning)
    wait_for(lambda: client.call("search", ws.root, args_of("alpha")) is not None, "the new server")
    assert stop_server()


def test_a_killed_server_never_blocks_a_command(served_ws: Workspace, client_env: None) -> None:
    pid = client.server_pid()
    assert pid is not None
    assert pid > 0
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: client.server_pid() is None, "the lock to die with the server")
    assert (protocol.runtime_dir() / protocol.SOCKET).exists()  # left behind
    assert client.connect() is None
    result = ee("search", "alpha", "--json", cwd=served_ws.root, served=True)
    assert result.stdout == in_process(served_ws.root, "search", "alpha", "--json").stdout
    wait_for(lambda: client.call("search", served_ws.root, args_of("alpha")) is not None, "a new server")
    assert stop_server()


def test_a_server_of_another_ee_makes_way_for_this_one(ws: Workspace, client_env: None) -> None:
    """A server started on demand by another ee (an older version, another install) tells this ee's
    clients to run in-process and stops, so the next command starts a server of this ee."""
    add_memories(ws.root, {"a": "alpha"})
    assert client.autostart()
    wait_for(lambda: client.call("search", ws.root, args_of("alpha")) is not None, "the server")
    first = client.server_pid()
    other = request("search", ws.root, args_of("alpha"), ee={"version": "0.1.0", "package": "/old/ee"})
    sock = client.connect()
    assert sock is not None
    with sock:
        protocol.send_frame(sock, json.dumps(other).encode())
        assert json.loads(protocol.recv_frame(sock)) == {"fallback": "version"}
    wait_for(lambda: client.server_pid() != first, "the other server to stop")
    result = ee("search", "alpha", "--json", cwd=ws.root, served=True)
    assert result.stdout == in_process(ws.root, "search", "alpha", "--json").stdout
    wait_for(lambda: client.call("search", ws.root, args_of("alpha")) is not None, "this ee's server")
    assert stop_server()


@pytest.mark.parametrize(
    "answers",
    [
        b"",
        b"\x00\x00\x00\x05hello",
        b'\x00\x00\x00\x0e{"code": 0}\x00',
        b'\x00\x00\x00\x11{"fallback": true}',
    ],
    ids=["closes", "garbage", "old-protocol", "old-fallback"],
)
def test_an_older_server_never_misleads_a_command(ws: Workspace, client_env: None, answers: bytes) -> None:
    """A server speaking an older protocol (argv in, exit code and streams out) answers nothing the
    client takes: the command runs in-process, with the same output."""
    (ws.root / ".ee/config.toml").write_text("[server]\nautostart = false\n")
    add_memories(ws.root, {"a": "alpha"})
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / protocol.SOCKET))
    listener.listen(8)

    def old_server() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(DEADLINE)
                try:
                    size = int.from_bytes(conn.recv(4), "big")
                    while size > 0:
                        size -= len(conn.recv(size))
                    conn.sendall(answers)
                except OSError:
                    pass

    thread = threading.Thread(target=old_server, daemon=True)
    thread.start()
    try:
        assert client.call("search", ws.root, args_of("alpha")) is None
        result = ee("search", "alpha", "--json", cwd=ws.root, served=True)
        assert (result.returncode, result.stdout, result.stderr) == (
            0,
            in_process(ws.root, "search", "alpha", "--json").stdout,
            b"",
        )
    finally:
        # Closing alone does not wake an accept() blocked in the thread on Linux: shutting the listener
        # down does (accept fails with EINVAL), so the thread ends now instead of after DEADLINE.
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=DEADLINE)
    assert not thread.is_alive()


def test_a_different_model_is_not_served(
    served_ws: Workspace, client_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_MODEL", str(served_ws.root / "no-model"))
    assert client.call("search", served_ws.root, args_of("alpha")) is None
    result = ee(
        "search",
        "alpha",
        "--json",
        cwd=served_ws.root,
        served=True,
        EE_MODEL=str(served_ws.root / "no-model"),
    )
    assert b"semantic_unavailable" in result.stdout  # the command's own model, not the server's


def test_no_server_variable(served_ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EE_NO_SERVER", "1")
    assert client.call("search", served_ws.root, args_of("alpha")) is None


# ------------------------------------------------------------------------------------------ other users


def python_for_nobody() -> str:
    """A Python interpreter the user ``nobody`` may run (a virtualenv under /root is out of its reach)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            subprocess.run([candidate, "-c", "pass"], user=NOBODY, check=True, timeout=DEADLINE)
        except (OSError, subprocess.CalledProcessError):
            continue
        return candidate
    pytest.skip("no Python that the user nobody may run")


@as_root
def test_a_runtime_folder_open_to_others_is_not_used(ws: Workspace) -> None:
    add_memories(ws.root, {"a": "alpha"})
    folder = protocol.runtime_dir()
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    result = ee("search", "alpha", "--json", cwd=ws.root, served=True)
    assert (result.returncode, result.stdout) == (0, in_process(ws.root, "search", "alpha", "--json").stdout)
    assert b"is open to other users (mode 0777, not 0700)" in result.stderr
    assert list(folder.iterdir()) == []  # nothing started there


@as_root
def test_a_socket_of_another_user_is_ignored(ws: Workspace) -> None:
    add_memories(ws.root, {"a": "alpha"})
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(folder / protocol.SOCKET))
    os.chown(folder / protocol.SOCKET, NOBODY, NOBODY)
    try:
        result = ee("search", "alpha", "--json", cwd=ws.root, served=True)
    finally:
        bound.close()
    assert (result.returncode, result.stdout) == (0, in_process(ws.root, "search", "alpha", "--json").stdout)
    assert b"belongs to uid 65534" in result.stderr


# A server of another user: it accepts one connection and reports how many bytes it received.
STRANGER = """
import socket, sys
s = socket.socket(fileno=int(sys.argv[2]))
s.listen(1)
print("listening", flush=True)
s.settimeout(float(sys.argv[1]))
conn, _ = s.accept()
conn.settimeout(2)
try:
    got = conn.recv(65536)
except OSError:
    got = b""
print("received", len(got), flush=True)
"""


@as_root
def test_a_server_of_another_user_is_refused_with_nothing_sent(ws: Workspace) -> None:
    add_memories(ws.root, {"a": "alpha"})
    folder = protocol.checked_dir(create=True)
    assert folder is not None
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(folder / protocol.SOCKET))  # a socket file of ours ...
    stranger = subprocess.Popen(  # ... served by nobody
        [python_for_nobody(), "-c", STRANGER, str(DEADLINE), str(bound.fileno())],
        pass_fds=(bound.fileno(),),
        stdout=subprocess.PIPE,
        user=NOBODY,
    )
    try:
        assert stranger.stdout is not None
        assert stranger.stdout.readline() == b"listening\n"
        result = ee("search", "alpha", "--json", cwd=ws.root, served=True)
        assert (result.returncode, result.stdout) == (
            0,
            in_process(ws.root, "search", "alpha", "--json").stdout,
        )
        assert b"served by uid 65534" in result.stderr
        out, _ = stranger.communicate(timeout=DEADLINE)
        assert out == b"received 0\n"  # it connected, checked, and sent nothing
    finally:
        bound.close()
        if stranger.poll() is None:
            stranger.kill()
            stranger.wait()


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


@as_root
def test_the_server_refuses_a_client_of_another_user(served_ws: Workspace) -> None:
    folder = protocol.runtime_dir()
    # As if the modes were lost (the peer check is the second lock): nobody may reach the socket.
    os.chmod(folder, 0o711)
    os.chmod(folder / protocol.SOCKET, 0o666)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        out = subprocess.run(
            [
                python_for_nobody(),
                "-c",
                PROBE,
                f"/proc/self/fd/{fd}/{protocol.SOCKET}",
                json.dumps(request("search", served_ws.root, args_of("alpha"))),
            ],
            pass_fds=(fd,),
            capture_output=True,
            user=NOBODY,
            timeout=DEADLINE,
            check=False,
        )
    finally:
        os.close(fd)
    assert (out.returncode, out.stderr) == (0, b"")
    assert out.stdout == b"0\n"  # closed without an answer, not even a fallback


@pytest.mark.parametrize("name", ["config.toml", "config.local.toml"])
def test_a_changed_setting_applies_to_the_next_served_answer(
    served_ws: Workspace, client_env: None, name: str
) -> None:
    """The server's workspace reads .ee/config.toml (or the person's own .ee/config.local.toml) again
    when it changed, as a new command would."""
    before = client.call("search", served_ws.root, args_of("alpha"))
    assert before is not None
    assert before["hits"]
    (served_ws.root / ".ee" / name).write_text("[query]\nmin_relevance = 1.0\n")
    after = client.call("search", served_ws.root, args_of("alpha"))
    assert after == json.loads(json.dumps(run(Workspace(served_ws.root), "search", args_of("alpha"))))
    assert after != before


def test_files_git_tracks_under_the_state_folder_are_refused_when_served(
    served_ws: Workspace, client_env: None
) -> None:
    """The client leaves that check to the server, which keeps its answer only while git's index is
    unchanged: a file committed under .ee/ after a served answer is refused at the next command."""
    root = served_ws.root
    assert client.call("search", root, args_of("alpha")) is not None
    (root / ".ee/shipped.txt").write_text("x\n")
    git(root, "add", "-f", ".ee/shipped.txt")
    assert client.call("search", root, args_of("alpha")) is None  # (told to run it in-process)
    done = ee("search", "alpha", "--json", cwd=root, served=True)
    assert done.returncode == 4, done.stderr
    assert b"shipped.txt" in done.stderr
    git(root, "rm", "-q", "--cached", ".ee/shipped.txt")
    assert client.call("search", root, args_of("alpha")) is not None


def test_saves_commits_and_checkouts_are_seen_by_the_next_served_query(
    served_ws: Workspace, client_env: None
) -> None:
    """The server answers from the view it keeps only when its watcher's barrier proves nothing changed
    (ee.serve.watch): each change below, made just before a request, is in that request's answer."""
    root = served_ws.root

    def hit_ids(text: str) -> set[str]:
        answer = client.call("search", root, args_of(text))
        assert answer is not None  # (served)
        return {hit["id"] for hit in answer["hits"]}

    for i in range(20):
        tmp = root / f"memories/.save{i}.tmp"
        tmp.write_text(f"---\nid: mem_saved\n---\nkilo{i} saved\n")
        os.replace(tmp, root / "memories/saved.md")  # (an editor's atomic save)
        assert "mem_saved" in hit_ids(f"kilo{i}"), f"save {i} missed"
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "saved")
    git(root, "checkout", "-q", "-b", "side")
    (root / "memories/side.md").write_text("---\nid: mem_side\n---\nlima on the side\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side")
    assert "mem_side" in hit_ids("lima")
    git(root, "checkout", "-q", "-")
    assert "mem_side" not in hit_ids("lima")
