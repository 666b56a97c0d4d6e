"""The per-user server under hostile frames on its real socket: a header announcing more than the limit,
a frame cut short, bytes that are no UTF-8 or no JSON, JSON nested past any stack, a request naming a
folder whose ``.ee/`` others may write. Each is refused or dropped; the server lives on and answers."""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import time
from pathlib import Path

import pytest
import test_server
from test_server import args_of, request

from ee.serve import client, protocol
from ee.workspace import Workspace

# The server fixtures of tests/test_server.py, here too.
start, served_ws, client_env = test_server.start, test_server.served_ws, test_server.client_env


def _raw(frame: bytes) -> bytes:
    """Send raw bytes on the server's socket; what came back (nothing when it dropped the connection)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        path = os.fspath(protocol.runtime_dir() / protocol.SOCKET)
        with protocol.socket_address(path) as address:
            sock.connect(address)
        sock.sendall(frame)
        sock.shutdown(socket.SHUT_WR)
        seen = b""
        try:
            while chunk := sock.recv(1 << 16):
                seen += chunk
        except ConnectionResetError:  # (closed with our bytes unread: dropped)
            return b""
        return seen


def _frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


HOSTILE = {
    "a header above the limit": struct.pack(">I", protocol.MAX_FRAME + 1) + b"{}",
    "a header of 4 GiB": b"\xff\xff\xff\xff",
    "a frame cut short": struct.pack(">I", 1000) + b'{"protocol": 3',
    "a header cut short": b"\x00\x00",
    "bytes that are no UTF-8": _frame(b"\xff\xfe\x00garbage"),
    "no JSON": _frame(b"GET / HTTP/1.1\r\n\r\n"),
    "JSON nested past any stack": _frame(b"[" * 200_000 + b"]" * 200_000),
    "a JSON list": _frame(b"[1, 2, 3]"),
}


def test_hostile_frames_are_dropped_and_the_server_answers_on(served_ws: Workspace, client_env: None) -> None:
    for what, frame in HOSTILE.items():
        answer = _raw(frame)
        if answer:  # a well-formed frame that is no request: told to run it itself
            assert json.loads(answer[4:]) == {"fallback": "protocol"}, what
    hits = client.call("search", served_ws.root, args_of("alpha"))["hits"]
    assert "mem_a" in {hit["id"] for hit in hits}


def test_a_workspace_whose_state_others_may_write_is_not_served(tmp_path: Path) -> None:
    from ee.serve import server as ee_server

    ws, _ = Workspace.init(tmp_path / "shared")
    test_server.add_memories(ws.root, {"a": "alpha"})
    root = str(ws.root.resolve())
    os.chmod(ws.root / ".ee", 0o777)  # another user could plant what the server would read and write
    served = ee_server.Server(log=lambda line: None, watch=False, stay=True)
    try:
        assert served.answer(request("search", root, args_of("alpha"))) == {"fallback": "workspace"}
        os.chmod(ws.root / ".ee", 0o755)
        assert "result" in served.answer(request("search", root, args_of("alpha")))
    finally:
        served.close()


@pytest.mark.parametrize("planted", ["a regular file", "a link to a file elsewhere"])
def test_a_file_or_link_at_the_socket_path_is_replaced_not_followed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, planted: str
) -> None:
    from conftest import run_cli, stop_server

    from ee.serve.client import server_pid

    folder = protocol.runtime_dir()
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / protocol.SOCKET
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n", encoding="utf-8")
    if planted == "a regular file":
        path.write_text("not a socket\n", encoding="utf-8")
    else:
        path.symlink_to(target)
    monkeypatch.delenv("EE_NO_SERVER")
    try:
        assert run_cli("remember", "The orders table lives in Postgres.", cwd=ws.root).code == 0
        found = run_cli("search", "orders", "--json", cwd=ws.root)
        assert found.code == 0, found.err
        assert "Traceback" not in found.err
        deadline = time.monotonic() + 120
        while server_pid() is None and time.monotonic() < deadline:  # (a wait, not a timing check)
            time.sleep(0.1)
        assert server_pid() is not None
        assert stat.S_ISSOCK(path.lstat().st_mode)  # the server's own socket took its place
    finally:
        stop_server()
    assert target.read_text(encoding="utf-8") == "keep me\n"


HOSTILE_ARGUMENTS = {  # a request no ee client sends: each would have answered a wrong list, or no answer
    "a negative limit": ("memory_list", {"limit": -1}),
    "a limit of true": ("memory_list", {"limit": True}),
    "a limit as text": ("memory_list", {"limit": "2"}),
    "tags as one string": ("memory_list", {"tags": "ci"}),
    "tags that are no strings": ("memory_list", {"tags": [1, None]}),
    "an unknown level": ("memory_list", {"level": "bogus"}),
    "a kind that is a list": ("memory_list", {"kind": ["fact"]}),
    "quarantined as text": ("memory_list", {"quarantined": "no"}),
    "an id with a path": ("memory_show", {"memory_id": "../../etc/passwd"}),
    "an id that is a list": ("memory_show", {"memory_id": ["mem_a"]}),
    "an option as as_of": ("memory_show", {"memory_id": "mem_a", "as_of": "--output=/tmp/x"}),
    "a hook name with a path": ("hook_check", {"name": "../../bin/sh", "paths": [], "added": ""}),
    "staged paths as a string": ("hook_check", {"name": "pre-commit", "paths": "a.md", "added": ""}),
    "staged paths that are no strings": ("hook_check", {"name": "pre-commit", "paths": [1], "added": ""}),
    "added lines that are no text": ("hook_check", {"name": "pre-commit", "paths": [], "added": 7}),
    "a floor of true": ("search", args_of("alpha") | {"min_relevance": True}),
    "a floor above 1": ("search", args_of("alpha") | {"min_relevance": 2}),
    "a floor as text": ("search", args_of("alpha") | {"min_relevance": "0.5"}),
    "query notes as text": ("search", args_of("alpha") | {"query_notes": "shortened"}),
    "quotas as text": ("context", args_of("alpha") | {"quotas": "procedural=1"}),
    "a negative floor of a pack": ("context", args_of("alpha") | {"min_relevance": -1}),
    "an unknown profile": ("why", {"memory_id": "mem_a", "query_text": "alpha", "profile": "bogus"}),
    "a query text that is a list": ("why", {"memory_id": "mem_a", "query_text": ["alpha"]}),
    "an id that is a number": ("memory_history", {"memory_id": 5}),
}


def test_hostile_arguments_are_never_answered_and_the_server_answers_on(
    served_ws: Workspace, client_env: None
) -> None:
    root = str(served_ws.root.resolve())
    for what, (op, args) in HOSTILE_ARGUMENTS.items():
        answer = json.loads(_raw(_frame(json.dumps(request(op, root, args)).encode()))[4:])
        assert answer == {"fallback": "error"}, what  # the client's own run says what is wrong
    nul = json.loads(_raw(_frame(json.dumps(request("memory_list", root + "\0x", {})).encode()))[4:])
    assert nul == {"fallback": "workspace"}  # (a NUL in the folder: an answer, not a dropped connection)
    listed = json.loads(_raw(_frame(json.dumps(request("memory_list", root, {"limit": 1})).encode()))[4:])
    assert listed["result"]["count"] == 1
