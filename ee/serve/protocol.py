"""Where the per-user server listens, who may talk to it, and how a request and its answer travel.

**The place.** One folder per user: ``$XDG_RUNTIME_DIR/ee/`` when the session has a runtime folder (the
user's own, mode 0700, made by the login manager), else ``ee-<uid>/`` in the temporary folder. It holds
``serve.sock`` (the socket, 0600), ``serve.pid`` (the running server's pid under an ``flock``: held while
it lives), ``serve.lock`` (held by a command starting one) and ``serve.log``. The folder must be this
user's alone: owned by the user, mode 0700, not a link (:func:`folder_problem`); anything else is reported
and no server is used or started there.

**Trust.** A client talks only to a server of its own user: the socket file must be this user's socket
(:func:`socket_problem`) and the process listening on it must run as this user (``SO_PEERCRED``,
:func:`peer_uid`). The server checks the client's uid the same way before it reads a byte.

**Frames.** Each message is a 4-byte big-endian length and that many bytes of UTF-8 JSON. A request is
``{"protocol", "ee", "op", "workspace", "args", "model"}``; the answer is ``{"result": …}``, or
``{"fallback": why}`` when the client should run the operation itself (not ours to serve, an error, a
server of another ee). ``ee`` names the client's ee (:func:`identity`: version and where it is installed):
a server answers only clients of its own ee, so a server left by an older (or another) install never
answers for a newer one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PROTOCOL = 3
SOCKET = "serve.sock"
PID_FILE = "serve.pid"
START_LOCK = "serve.lock"
LOG = "serve.log"
MAX_FRAME = 256 * 2**20
_HEADER = struct.Struct(">I")


class Untrusted(Exception):
    """A runtime folder, socket or server that another user controls: ``(message, repair)``."""


def server_disabled() -> bool:
    """``EE_NO_SERVER=1``: neither use nor start a server."""
    return os.environ.get("EE_NO_SERVER", "") not in ("", "0")


def runtime_dir() -> Path:
    """This user's folder for the server (see the module's docstring); not created here."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return Path(base) / "ee"
    import tempfile

    return Path(tempfile.gettempdir()) / f"ee-{os.geteuid()}"


def folder_problem(info: os.stat_result, uid: int) -> str | None:
    """Why a runtime folder with this ``lstat`` must not hold a server of user ``uid``, or None."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != uid:
        return f"belongs to uid {info.st_uid}, not to you (uid {uid})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"is open to other users (mode {stat.S_IMODE(info.st_mode):04o}, not 0700)"
    return None


def socket_problem(info: os.stat_result, uid: int) -> str | None:
    """Why a socket file with this ``lstat`` is not a server of user ``uid`` to talk to, or None."""
    if info.st_uid != uid:
        return f"belongs to uid {info.st_uid}, not to you (uid {uid})"
    if not stat.S_ISSOCK(info.st_mode):
        return "is not a socket"
    return None


def peer_problem(peer: int, uid: int) -> str | None:
    """Why a process running as ``peer`` is not one for user ``uid``, or None."""
    return None if peer == uid else f"is served by uid {peer}, not by you (uid {uid})"


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def checked_dir(create: bool) -> Path | None:
    """The runtime folder after its checks; None when it does not exist (and ``create`` is False).
    Raises :class:`Untrusted` when another user controls it."""
    path = runtime_dir()
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    problem = folder_problem(info, os.geteuid())
    if problem is not None:
        raise Untrusted(
            f"{path} {problem}: not using or starting ee's server there",
            f"remove it (rm -r {path}); ee makes it again, yours alone",
        )
    return path


def identity() -> dict[str, str]:
    """Which ee this process runs: its version and the folder it is installed in."""
    from ee import __version__

    return {"version": __version__, "package": os.path.dirname(os.path.abspath(__file__))}


@contextlib.contextmanager
def socket_address(path: str) -> Iterator[str]:
    """``path`` as an AF_UNIX address, shortened through /proc/self/fd when over the 108-byte limit."""
    if len(os.fsencode(path)) < 100 or not os.path.isdir("/proc/self/fd"):
        yield path
        return
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{os.path.basename(path)}"
    finally:
        os.close(fd)


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_frame(sock: socket.socket, deadline: float | None = None) -> bytes:
    """One frame; by ``deadline`` (a ``time.monotonic()`` value) when given, else within the socket's
    timeout for each read."""
    size = _HEADER.unpack(_recv_exact(sock, 4, deadline))[0]
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return _recv_exact(sock, size, deadline)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the peer was too slow")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def warn(exc: Untrusted) -> None:
    message, hint = exc.args
    print(f"ee: warning: {message} (repair: {hint})", file=sys.stderr, flush=True)
