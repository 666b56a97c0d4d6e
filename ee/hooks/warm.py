"""The warm path of the hooks: is ``ee watch`` running for this workspace, and ask its query server.

A hook cannot hand itself to the server whole (git's ``GIT_INDEX_FILE`` and ``GIT_DIR`` do not travel),
so it does its git work here and sends the server what it found: the staged paths and added lines, which
``ee hook-check NAME`` (:func:`check`) turns into the hook's answer with the server's warm imports, hook
table and index; or a read-only ``ee search`` / ``ee context``, over the protocol of
:mod:`ee.serve.client`. Any failure means "no server": the caller runs the same code in-process, which
gives the same answer, only slower.

The connection is :func:`ee.serve.client.connect`'s, so a hook talks only to a server of its own user (an
untrusted ``.ee/`` or socket is reported on stderr, and the hook runs its check itself).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from _typeshed import StrPath

# As ee.serve.watch.PID_FILE (not imported: ee.serve.watch costs ~80 ms of imports).
PID_FILE = ".ee/watch.pid"
ANSWER_TIMEOUT = 30.0
# A hook-check is answered in a few ms, unless the server is busy: it runs one command at a time, under
# the lock its index updates take (~1.5 s after HEAD moved, at 10k memories). Past this, the hook runs
# the check itself (~20 ms more than served), well within its time limit.
CHECK_TIMEOUT = 0.15


def watcher_alive(root: StrPath) -> bool:
    """Is an ``ee watch`` holding its pid file's lock for ``root``? (as ``ee.serve.watch.watcher_pid``)"""
    if os.environ.get("EE_NO_SERVER", "") not in ("", "0"):
        return False
    import fcntl

    from ee.config import open_regular

    try:
        fd = open_regular(os.path.join(root, PID_FILE), os.O_RDONLY)  # (a FIFO: no blocking; a link: no)
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

    def answer(self) -> tuple[int, bytes, bytes] | None:
        """(exit code, stdout, stderr), or None (no answer, or the server asks the client to run it)."""
        from ee.serve import client

        try:
            code = client.answer_code(client.recv_frame(self.sock))
            if code is None:  # {"fallback": true}: not served
                return None
            out = client.recv_frame(self.sock)
            err = client.recv_frame(self.sock)  # a search's degradations the in-process run prints too
        except Exception:  # any trouble with the server means "run it here": the same answer, only slower
            return None
        finally:
            self.sock.close()
        return code, out, err

    def close(self) -> None:
        """Leave the answer unread (the server notices the closed connection)."""
        self.sock.close()

    def data(self) -> dict[str, Any] | None:
        """The ``data`` of the JSON envelope answered (the command must ask for JSON), or None."""
        return _data(self.answer())


def send(
    root: StrPath, argv: list[str], stdin: str | None = None, timeout: float = ANSWER_TIMEOUT
) -> Request | None:
    """Send ``ee --workspace ROOT ARGV`` (``stdin``: its standard input) to the server, or None when
    there is none to send it to. ``timeout``: how long to wait for each part of the answer."""
    import json

    from ee import __version__
    from ee.serve import client

    request = {
        "protocol": client.PROTOCOL,
        "version": __version__,
        "argv": ["--workspace", os.fspath(root), *argv],
        "cwd": os.fspath(root),
        "env": client.passed_environment(os.environ, write=False),
        "stdin": stdin,
        "tty": {"stdout": False, "stderr": False},
    }
    try:
        data = json.dumps(request, ensure_ascii=False).encode("utf-8")  # not UTF-8 (a path): run it here
        sock = client.connect(os.fspath(root))
    except client.Untrusted as exc:
        client.warn(exc)
        return None
    except (OSError, ValueError):
        return None
    if sock is None:
        return None
    try:
        sock.settimeout(timeout)
        client.send_frame(sock, data)
    except Exception:  # no server after all: the caller runs the command itself
        sock.close()
        return None
    return Request(sock)


# ------------------------------------------------------------------------------------------ hook-check


def check(root: StrPath, name: str, paths: Sequence[str], added: str) -> tuple[int, bytes, bytes] | None:
    """``ee hook-check NAME`` run by the server over this staged change: (exit code, stdout, stderr), or
    None (no server, one that does not serve it — an older ee — or one busy past :data:`CHECK_TIMEOUT`).
    The change travels as the command's standard input (:func:`change_text`)."""
    request = send(root, ["hook-check", name], change_text(paths, added), CHECK_TIMEOUT)
    return None if request is None else request.answer()


def change_text(paths: Sequence[str], added: str) -> str:
    """The staged change as text: the number of paths, then each path, each followed by a NUL (git paths
    hold none), then the added lines."""
    return "".join(f"{item}\0" for item in (str(len(paths)), *paths)) + added


def read_change(text: str) -> tuple[list[str], str]:
    """The (paths, added lines) of :func:`change_text`; ``ValueError`` for anything else."""
    count, _sep, rest = text.partition("\0")
    parts = rest.split("\0", int(count))
    if len(parts) != int(count) + 1:
        raise ValueError("not a staged change")
    return parts[:-1], parts[-1]


def exchange(root: StrPath, argv: list[str]) -> tuple[int, bytes, bytes] | None:
    """(exit code, stdout, stderr) of ``ee --workspace ROOT ARGV`` run by the server, or None."""
    request = send(root, argv)
    return None if request is None else request.answer()


def ask(root: StrPath, argv: list[str]) -> dict[str, Any] | None:
    """The ``data`` of the JSON envelope the server answers ``argv`` (which must ask for JSON), or None."""
    return _data(exchange(root, argv))


def _data(answer: tuple[int, bytes, bytes] | None) -> dict[str, Any] | None:
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
