"""The warm query server of ``ee watch`` and its client: same bytes as in-process, clean fallbacks."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import git

from ee.client import is_read_only, parse_argv, try_server
from ee.workspace import Workspace

DEADLINE = 60.0
QUERY = '{"version": "ee.query.v1", "query": {"text": "alpha"}}'


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # type: ignore[operator]
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


def start_watcher(ws: Workspace) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(ws.root), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: (ws.root / ".ee/serve.sock").exists() or proc.poll() is not None, "the socket")
    assert proc.poll() is None
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=DEADLINE)


@pytest.fixture
def served_ws(ws: Workspace) -> Iterator[Workspace]:
    """A workspace with three memories (one committed) and a running ``ee watch``."""
    for name, body in (("a", "alpha rollback window"), ("b", "alpha bravo"), ("c", "charlie")):
        (ws.root / f"memories/{name}.md").write_text(f"---\nid: mem_{name}\ntags: [ci]\n---\n{body}\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "memories")
    proc = start_watcher(ws)
    yield ws
    stop(proc)


def served_directly(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> int | None:
    """``try_server`` in this process: an int when the server answered, None for a fallback."""
    monkeypatch.delenv("EE_NO_SERVER", raising=False)
    code = try_server(argv)
    capfd.readouterr()
    return code


# ------------------------------------------------------------------------------------------ same bytes


@pytest.mark.parametrize(
    "args",
    [
        ["search", "alpha", "--json"],
        ["search", "alpha rollback", "--mode", "lexical", "--json"],
        ["memory", "list", "--json"],
        ["memory", "show", "mem_a", "--json"],
        ["memory", "show", "mem_nope", "--json"],  # an error: exit code and envelope too
        ["index", "status", "--json"],
        ["schema", "list", "--json"],
        ["search", "--query-file", "-", "--json"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_served_output_is_byte_identical_to_in_process(served_ws: Workspace, args: list[str]) -> None:
    stdin = QUERY if "-" in args else None
    served = ee(*args, cwd=served_ws.root, served=True, stdin=stdin)
    local = ee(*args, cwd=served_ws.root, served=False, stdin=stdin)
    assert served.returncode == local.returncode
    assert served.stdout == local.stdout
    assert served.stderr == local.stderr


def test_requests_are_really_served(
    served_ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workspace", str(served_ws.root), "search", "alpha", "--json"]
    assert served_directly(argv, monkeypatch, capfd) == 0
    assert served_directly(["-W", str(served_ws.root), "memory", "show", "mem_nope"], monkeypatch, capfd) == 7
    for writes in (
        ["remember", "a new fact"],
        ["memory", "tags", "mem_a", "--add", "x"],
        ["index", "rebuild"],
    ):
        assert served_directly(["--workspace", str(served_ws.root), *writes], monkeypatch, capfd) is None
    assert (
        served_directly(["--workspace", str(served_ws.root), "search", "--help"], monkeypatch, capfd) is None
    )


def test_client_settings_and_directory_apply_to_the_request(served_ws: Workspace) -> None:
    sub = served_ws.root / "memories"
    for env in ({"EE_FORMAT": "human"}, {"EE_FORMAT": "json"}):
        served = ee("search", "alpha", cwd=sub, served=True, **env)  # the workspace found from the cwd
        local = ee("search", "alpha", cwd=sub, served=False, **env)
        assert served.returncode == local.returncode == 0
        assert served.stdout == local.stdout
    assert b"mem_a" in served.stdout


def test_an_edit_is_seen_by_the_next_served_query(served_ws: Workspace) -> None:
    (served_ws.root / "memories/c.md").write_text("---\nid: mem_c\n---\nalpha now mentioned\n")
    served = ee("search", "alpha", "--json", cwd=served_ws.root, served=True)
    assert {h["id"] for h in json.loads(served.stdout)["data"]["hits"]} == {"mem_a", "mem_b", "mem_c"}


def test_concurrent_clients_get_the_same_answers(served_ws: Workspace) -> None:
    local = ee("search", "alpha", "--json", cwd=served_ws.root, served=False)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: ee("search", "alpha", "--json", cwd=served_ws.root, served=True), range(8))
        )
    assert {r.stdout for r in results} == {local.stdout}


def test_socket_is_private_to_its_owner(served_ws: Workspace) -> None:
    mode = (served_ws.root / ".ee/serve.sock").stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


# ------------------------------------------------------------------------------------------ fallbacks


def test_a_stale_socket_falls_back_in_process(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (ws.root / "memories/a.md").write_text("---\nid: mem_a\n---\nalpha\n")
    path = ws.root / ".ee/serve.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: connection refused
    argv = ["--workspace", str(ws.root), "search", "alpha", "--json"]
    assert served_directly(argv, monkeypatch, capfd) is None
    result = ee(*argv, cwd=ws.root, served=True)
    assert result.returncode == 0
    assert result.stdout == ee(*argv, cwd=ws.root, served=False).stdout

    path.unlink()
    path.write_text("not a socket")
    assert served_directly(argv, monkeypatch, capfd) is None


def test_a_killed_server_falls_back_and_a_new_watcher_takes_over(
    served_ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workspace", str(served_ws.root), "search", "alpha", "--json"]
    pid = int((served_ws.root / ".ee/watch.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _alive(pid), "the watcher to die")
    assert (served_ws.root / ".ee/serve.sock").exists()  # left behind
    assert served_directly(argv, monkeypatch, capfd) is None
    assert ee(*argv, cwd=served_ws.root, served=True).returncode == 0

    proc = start_watcher(served_ws)
    try:
        wait_for(lambda: served_directly(argv, monkeypatch, capfd) == 0, "the new server")
    finally:
        stop(proc)


def test_no_server_variable_and_no_workspace(
    served_ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_NO_SERVER", "1")
    assert try_server(["--workspace", str(served_ws.root), "search", "alpha"]) is None
    monkeypatch.delenv("EE_NO_SERVER")
    monkeypatch.chdir(tmp_path)
    assert try_server(["search", "alpha"]) is None  # no workspace up from here: the CLI says so itself


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


# ------------------------------------------------------------------------------------------ client


def test_parse_argv_finds_the_workspace_and_the_command() -> None:
    assert parse_argv(["search", "x"]) == (None, ("search", None))
    assert parse_argv(["-W", "/w", "memory", "show", "id"]) == ("/w", ("memory", "show"))
    assert parse_argv(["--workspace=/w", "index", "status"]) == ("/w", ("index", "status"))
    assert parse_argv(["-W/w", "why", "id"]) == ("/w", ("why", None))
    assert parse_argv(["--version"]) == (None, None)
    assert parse_argv([]) == (None, None)
    assert is_read_only(("search", None))
    assert is_read_only(("memory", "history"))
    assert not is_read_only(("memory", "forget"))
    assert not is_read_only(("remember", None))
    assert not is_read_only(("index", "rebuild"))
    assert not is_read_only(None)


def test_the_client_imports_nothing_heavy() -> None:
    code = (
        "import sys, ee.client\n"
        "heavy = {'click', 'numpy', 'yaml', 'ruamel', 'watchdog', 'ee.cli', 'ee.workspace'}\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
