"""The warm path of the hooks: is ``ee watch`` running for this workspace, and ask its query server.

A hook cannot hand itself to the server whole (git's ``GIT_INDEX_FILE`` and ``GIT_DIR`` do not travel),
so it does its git work here and asks the server only for the read-only ``ee search`` / ``ee context`` it
needs, over the protocol of :mod:`ee.client`. Any failure means "no server": the caller runs the same
command in-process, which gives the same answer, only slower.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (json, socket and the client are
if TYPE_CHECKING:  # imported only to ask the server: every hook checks for a watcher, few ask it)
    from typing import Any

    from _typeshed import StrPath

PID_FILE = ".ee/watch.pid"  # as ee.watch.PID_FILE (not imported: ee.watch costs ~80 ms of imports)
SOCKET = ".ee/serve.sock"
CONNECT_TIMEOUT = 0.25
ANSWER_TIMEOUT = 30.0


def watcher_alive(root: StrPath) -> bool:
    """Is an ``ee watch`` holding its pid file's lock for ``root``? (as ``ee.watch.watcher_pid``)"""
    if os.environ.get("EE_NO_SERVER", "") not in ("", "0"):
        return False
    import fcntl

    try:
        fd = os.open(os.path.join(root, PID_FILE), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


class Request:
    """A command sent to the server; :meth:`answer` reads its answer (the hook works meanwhile)."""

    __slots__ = ("sock",)

    def __init__(self, sock: Any) -> None:
        self.sock = sock

    def answer(self) -> tuple[int, bytes] | None:
        """(exit code, stdout), or None (no answer, or the server asks the client to run it)."""
        import json

        from ee import client

        try:
            header = json.loads(client.recv_frame(self.sock))
            if not isinstance(header, dict) or header.get("fallback"):
                return None
            out = client.recv_frame(self.sock)
            client.recv_frame(self.sock)  # stderr: degradations the in-process run would print too
        except Exception:  # any trouble with the server means "run it here": the same answer, only slower
            return None
        finally:
            self.sock.close()
        return int(header.get("code", 1)), out

    def close(self) -> None:
        """Leave the answer unread (the server notices the closed connection)."""
        self.sock.close()

    def data(self) -> dict[str, Any] | None:
        """The ``data`` of the JSON envelope answered (the command must ask for JSON), or None."""
        return _data(self.answer())


def send(root: StrPath, argv: list[str]) -> Request | None:
    """Send ``ee --workspace ROOT ARGV`` to the server, or None when there is none to send it to."""
    path = os.path.join(root, SOCKET)
    if not os.path.exists(path):
        return None
    import json
    import socket

    try:
        from ee import __version__, client
    except ImportError:  # pragma: no cover - the client ships with ee
        return None
    request = {
        "protocol": client.PROTOCOL,
        "version": __version__,
        "argv": ["--workspace", os.fspath(root), *argv],
        "cwd": os.fspath(root),
        "env": {k: v for k, v in os.environ.items() if k.startswith("EE_")},
        "stdin": None,
        "tty": {"stdout": False, "stderr": False},
        "uid": os.getuid(),
    }
    sock = socket.socket(socket.AF_UNIX)
    try:
        with client.socket_address(path) as address:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(address)
        sock.settimeout(ANSWER_TIMEOUT)
        client.send_frame(sock, json.dumps(request).encode("utf-8"))
    except Exception:  # no server after all: the caller runs the command itself
        sock.close()
        return None
    return Request(sock)


def exchange(root: StrPath, argv: list[str]) -> tuple[int, bytes] | None:
    """(exit code, stdout) of ``ee --workspace ROOT ARGV`` run by the server, or None."""
    request = send(root, argv)
    return None if request is None else request.answer()


def ask(root: StrPath, argv: list[str]) -> dict[str, Any] | None:
    """The ``data`` of the JSON envelope the server answers ``argv`` (which must ask for JSON), or None."""
    return _data(exchange(root, argv))


def _data(answer: tuple[int, bytes] | None) -> dict[str, Any] | None:
    if answer is None or answer[0] != 0:
        return None
    import json

    try:
        doc = json.loads(answer[1])
        if doc.get("success") is True and isinstance(doc.get("data"), dict):
            data: dict[str, Any] = doc["data"]
            return data
    except (ValueError, AttributeError):
        pass
    return None


def ask_text(root: StrPath, argv: list[str]) -> str | None:
    """The text the server prints for ``argv``, or None."""
    answer = exchange(root, argv)
    if answer is None or answer[0] != 0:
        return None
    return answer[1].decode("utf-8", "replace")
